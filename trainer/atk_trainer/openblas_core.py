"""OpenBLAS's kernel choice, made from the CPU's own feature flags before torch loads OpenBLAS.

Debian's torch does its float32 matmuls in OpenBLAS (other builds use MKL or oneDNN, and never read
this). OpenBLAS picks its kernels from the CPU model number, and a model it does not know (a new chip,
or a virtual machine reporting a generic model) gets its oldest x86-64 kernels, "Prescott" (SSE3).
On a 2-core cloud VM with AVX-512 (Sapphire Rapids flags, reported as "Intel(R) Xeon(R) Processor")
that made every matmul 3-5x slower than the AVX-512 kernels on the same shapes: 27 against 125
GFLOP/s on a (512 x 576) @ (576 x 1536) linear, 21 against 88 at 64 rows, 20 against 48 at 16 rows
(one thread, same process, bench/real.ts). The flags say what the CPU can run, so the kernels are
picked from them: the AVX-512 ones where the five AVX-512 subsets they use are present, the AVX2 ones
where AVX2 and FMA are, else OpenBLAS's own choice. A chip OpenBLAS knows gets the same kernels it
would pick itself. OPENBLAS_CORETYPE set by the user wins.

OpenBLAS reads the variable once, when the library is loaded: this runs on importing atk_trainer,
before any of its modules imports torch.
"""
from __future__ import annotations

import os
from typing import Iterable, MutableMapping, Optional

AVX512 = {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}  # what OpenBLAS's SkylakeX kernels use
AVX2 = {"avx2", "fma"}


def core_for_flags(flags: Iterable[str]) -> Optional[str]:
    """The OpenBLAS core type whose kernels a CPU with these /proc/cpuinfo flags runs; None: leave the
    choice to OpenBLAS."""
    present = set(flags)
    if AVX512 <= present:
        return "SkylakeX"
    if AVX2 <= present:
        return "Haswell"
    return None


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> Iterable[str]:
    """The first CPU's feature flags; none where the file is absent or unreadable (not Linux)."""
    try:
        with open(cpuinfo, encoding="utf8") as f:
            for line in f:
                if line.startswith("flags"):
                    return line.split(":", 1)[1].split()
    except OSError:
        pass
    return ()


def choose_openblas_core(env: MutableMapping[str, str] = os.environ) -> Optional[str]:
    """Set OPENBLAS_CORETYPE in `env` from the CPU's flags unless it is set; returns the value in force."""
    if "OPENBLAS_CORETYPE" not in env:
        core = core_for_flags(cpu_flags())
        if core is not None:
            env["OPENBLAS_CORETYPE"] = core
    return env.get("OPENBLAS_CORETYPE")
