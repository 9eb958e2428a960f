"""The trainer process's log: one timestamped line on stdout per event (start, stop, control calls, errors,
CUDA graphs turned off). Below model/, train/ and serve/, so any of them may log."""
import time


def log(message: str) -> None:
    """Print a timestamped line; never raises. When atk was killed its end of our stdout pipe is gone,
    and an EPIPE here must not stop the shutdown the line announces."""
    try:
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}", flush=True)
    except (OSError, ValueError):
        pass
