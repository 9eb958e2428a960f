"""atk's bundled trainer: policy loading, losses, optimisation, checkpoints and the embedded engine."""
from .openblas_core import choose_openblas_core

# Before any module of the package imports torch, which loads OpenBLAS (openblas_core.py says why).
choose_openblas_core()
