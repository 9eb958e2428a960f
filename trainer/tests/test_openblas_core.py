"""OpenBLAS's kernels are picked from the CPU's flags before torch loads it, unless the user chose them."""
import os
import subprocess
import sys

import pytest

from atk_trainer.openblas_core import choose_openblas_core, core_for_flags, cpu_flags

SAPPHIRE_RAPIDS_VM = "fpu sse sse2 avx f16c avx2 fma avx512f avx512dq avx512cd avx512bw avx512vl amx_bf16".split()


def test_core_for_flags_returns_the_widest_kernels_the_flags_allow():
    assert core_for_flags(SAPPHIRE_RAPIDS_VM) == "SkylakeX"
    assert core_for_flags(["sse2", "avx", "avx2", "fma"]) == "Haswell"
    assert core_for_flags(["avx512f", "avx2", "fma"]) == "Haswell"  # AVX-512 without the subsets SkylakeX uses
    assert core_for_flags(["sse2", "avx"]) is None
    assert core_for_flags([]) is None


def test_cpu_flags_reads_the_first_cpus_flags_and_nothing_without_the_file(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 fma\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    assert list(cpu_flags(str(info))) == ["fpu", "avx2", "fma"]
    assert list(cpu_flags(str(tmp_path / "absent"))) == []


def test_choose_openblas_core_keeps_the_users_setting():
    env = {"OPENBLAS_CORETYPE": "Prescott"}
    assert choose_openblas_core(env) == "Prescott"
    assert env == {"OPENBLAS_CORETYPE": "Prescott"}
    env = {}
    assert choose_openblas_core(env) == core_for_flags(cpu_flags())
    assert env.get("OPENBLAS_CORETYPE") == core_for_flags(cpu_flags())


def test_torch_imported_after_atk_trainer_runs_the_chosen_openblas_kernels():
    script = (
        "import ctypes, os, atk_trainer, torch\n"
        "lib = next((l.split()[-1] for l in open('/proc/self/maps') if 'libopenblas' in l), None)\n"
        "if lib is None: print('none'); raise SystemExit\n"
        "f = ctypes.CDLL(lib).openblas_get_corename; f.restype = ctypes.c_char_p\n"
        "print(f().decode(), os.environ.get('OPENBLAS_CORETYPE'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    trainer = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=trainer, check=True
    )
    words = out.stdout.split()
    if words == ["none"] or core_for_flags(cpu_flags()) is None:
        pytest.skip("torch does not use OpenBLAS here, or the CPU has neither AVX2 nor AVX-512")
    corename, chosen = words
    assert corename.lower() == chosen.lower()
