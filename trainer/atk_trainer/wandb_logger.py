"""Feeds one atk run's metrics to Weights & Biases through W&B's own Python client.

atk starts this as `python wandb_logger.py` and writes JSON lines to its stdin:
  {"init": {"project": ..., "entity": ..., "name": ..., "tags": [...], "config": {...}, "dir": ...}}
  {"log": {"tag": value, ...}, "step": N}
End of input (atk finished, or died) finishes the W&B run. Each line is answered on stdout with
{"ok": true} or {"error": "..."} so atk can warn once and stop feeding a failed logger. Offline
machines set WANDB_MODE=offline (the client writes under dir) and `wandb sync` later.
"""
import json
import sys


def reply(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def main():
    try:
        import wandb
    except ImportError as error:
        reply(error=f"the wandb Python package is not installed ({error}); pip install wandb")
        return 1
    run = None
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
            if "init" in message:
                init = message["init"]
                run = wandb.init(
                    project=init.get("project"),
                    entity=init.get("entity"),
                    name=init.get("name"),
                    tags=init.get("tags"),
                    config=init.get("config"),
                    dir=init.get("dir"),
                )
            elif "log" in message:
                if run is None:
                    raise RuntimeError("log before init")
                run.log(message["log"], step=message["step"])
            reply(ok=True)
        except Exception as error:  # a W&B failure is reported to atk, which warns once; the run goes on
            reply(error=f"{type(error).__name__}: {error}")
            return 1
    if run is not None:
        run.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
