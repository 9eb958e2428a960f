"""bench/gpu.py (npm run bench gpu) on a machine without CUDA: it says what it needs and exits 0."""
import os
import subprocess
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "gpu.py")


def test_gpu_bench_says_it_needs_cuda_and_exits_0_without_one():
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, BENCH], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout
        == "bench/gpu.py needs a CUDA GPU; this machine has none (torch sees no CUDA device). Nothing measured.\n"
    )


def load_bench():
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
    return bench


def test_gpu_bench_measurements_run_on_a_tiny_shape_on_cpu():
    # The same code the CUDA run takes, on CPU with a tiny Qwen-like shape: it catches a broken bench
    # before it costs GPU time. The figures themselves mean nothing here.
    bench = load_bench()
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
    assert done.stdout == (
        "bench/gpu.py: unknown section 'trian'; sections are train, decode, fit, parts (default: train, decode, fit)\n"
    )


def test_the_parts_of_a_step_are_measured_alone_on_a_tiny_shape_on_cpu():
    bench = load_bench()
    parts = bench.parts_figures(
        "tiny", lora_rank=2, train_rows=3, train_length=12, decode_batch=2, prompt=5, new_tokens=3, device="cpu"
    )
    assert set(parts) == {"train_s", "decode_s", "peak_gib"}
    assert parts["train_s"] > 0 and parts["decode_s"] > 0


def test_time_shares_split_busy_time_by_category_and_count_overlaps_once():
    bench = load_bench()
    kernels = [
        ("sm90_xmma_gemm_bf16bf16_bf16f32", 0.0, 40.0),
        ("flash_fwd_kernel", 40.0, 10.0),
        ("vectorized_elementwise_kernel<4, AddFunctor>", 45.0, 10.0),  # overlaps the attention kernel by 5
        ("multi_tensor_apply_kernel<AdamFunctor>", 70.0, 10.0),
        ("some_unknown_kernel", 80.0, 5.0),
    ]
    shares = bench.time_shares(kernels, wall_us=100.0)
    busy = 0.70  # [0, 55) and [70, 85): 55 + 15 of 100 us
    assert shares["idle"] == pytest.approx(1 - busy)
    total = 75.0  # summed kernel time (the overlap counted in both kernels)
    assert shares["matmul"] == pytest.approx(40 / total * busy)
    assert shares["attention"] == pytest.approx(10 / total * busy)
    assert shares["elementwise/norm"] == pytest.approx(10 / total * busy)
    assert shares["optimizer"] == pytest.approx(10 / total * busy)
    assert shares["other"] == pytest.approx(5 / total * busy)
    assert sum(shares.values()) == pytest.approx(1.0)


def test_a_profiled_training_step_on_cpu_is_mostly_matmul_and_elementwise_work():
    # The profiler path the CUDA run takes, on CPU ops (aten names) of a tiny model: it must find the matmuls.
    bench = load_bench()
    shares = bench.profile_train_step("tiny", device="cpu", sequences=2, length=16)
    assert sum(shares.values()) == pytest.approx(1.0)
    assert shares["matmul"] > 0 and shares["elementwise/norm"] > 0 and shares["optimizer"] > 0
