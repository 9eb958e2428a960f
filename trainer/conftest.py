# Makes `atk_trainer` importable when pytest runs from the repository root (`pytest trainer`).
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import atk_trainer  # noqa: E402,F401 - picks OpenBLAS's kernels (openblas_core.py) before a test imports torch
