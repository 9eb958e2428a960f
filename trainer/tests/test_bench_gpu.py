"""bench/gpu.py (npm run bench gpu) on a machine without CUDA: it says what it needs and exits 0."""
import os
import subprocess
import sys

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "gpu.py")


def test_gpu_bench_says_it_needs_cuda_and_exits_0_without_one():
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, BENCH], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "bench/gpu.py needs a CUDA GPU; this machine has none (torch sees no CUDA device). Nothing measured.\n"
