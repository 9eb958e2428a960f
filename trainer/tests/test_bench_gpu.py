"""bench/gpu.py (npm run bench gpu) on a machine without CUDA: it says what it needs and exits 0."""
import os
import subprocess
import sys

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "gpu.py")


def test_gpu_bench_says_it_needs_cuda_and_exits_0_without_one():
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, BENCH], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout
        == "bench/gpu.py needs a CUDA GPU; this machine has none (torch sees no CUDA device). Nothing measured.\n"
    )


def test_gpu_bench_measurements_run_on_a_tiny_shape_on_cpu():
    # The same code the CUDA run takes, on CPU with a tiny Qwen-like shape: it catches a broken bench
    # before it costs GPU time. The figures themselves mean nothing here.
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_bench", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.QWEN["tiny"] = dict(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=300,
        tie_word_embeddings=True,
    )
    for mode in ("full", "lora"):
        positions, mfu, gib = bench.train_figures(
            "tiny", "builtin", mode, 1.0, steps=1, sequences=2, length=16, device="cpu"
        )
        assert positions > 0 and mfu > 0 and gib == 0.0
    for decode_step in ("static", "dynamic"):  # "static" is the step CUDA captures ("graphs"), run eagerly
        rates = bench.decode_figures(
            runs=((1, 3), (3, 4)), size="tiny", prompt=8, device="cpu", decode_step=decode_step
        )
        assert set(rates) == {1, 3} and all(r > 0 for r in rates.values())


def test_gpu_bench_refuses_an_unknown_section():
    done = subprocess.run([sys.executable, BENCH, "trian"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stdout == "bench/gpu.py: unknown section 'trian'; sections are train, decode, fit (default: all)\n"
