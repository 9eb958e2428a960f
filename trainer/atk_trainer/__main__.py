"""`python -m atk_trainer --host 127.0.0.1 --port P [--parent-pid PID] [--threads N]` (PYTHONPATH=trainer)."""
import sys

from .serve.server import main

sys.exit(main())
