"""The bundled trainer and embedded engine on one CUDA GPU, next to the first measurement (an H200,
trainer at commit 415c3f2): training positions/s, MFU against the measured bf16 matmul rate and peak
memory for Qwen2.5-0.5B and 1.5B shapes with random weights (builtin and, when installed, transformers;
full and LoRA r16), decode tokens/s at batch 1, 64 and 256 with the decode step captured as CUDA graphs
(capture time included) and with the eager (dynamic) step, and the largest Qwen2.5 shape whose LoRA
step at 32 x 2048 tokens fits in the card's memory. Each figure is printed with its ratio to the baseline.

    /usr/bin/python3 bench/gpu.py [train] [decode] [fit] [parts] [--profile] [--json FILE]
                                                   (or: npm run bench gpu; default: train decode fit)

`--profile` adds where a training step's GPU time goes (torch.profiler: matmul, attention, elementwise and
normalisation, optimizer, idle gaps between kernels); `parts` measures one train step and one decode batch
alone at the shapes in $ATK_GPU_PARTS (bench/gpu-run.ts uses it for its predicted step time); tables print
as markdown, so docs/gpu.md can take them as they are.

On a machine without CUDA it says so and exits 0. Settings match the baseline's: 32 sequences x 1024
tokens (512 prompt + 512 trained), micro_batch_tokens 8192, bf16 autocast; MFU counts 6 x matmul
parameters (lm_head included) per position plus causal attention.
"""
import contextlib
import gc
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trainer"))

import torch  # noqa: E402

# The first measurement (H200, torch 2.11, transformers 5.17, peft 0.21): (positions/s, MFU, peak GiB).
BASELINE_TRAIN = {
    ("0.5B", "builtin", "full"): (49_669, 0.195, 42.0),
    ("0.5B", "builtin", "lora"): (45_179, 0.177, 35.3),
    ("0.5B", "transformers", "full"): (46_106, 0.181, 41.4),
    ("0.5B", "transformers", "lora"): (34_588, 0.136, 35.0),
    ("1.5B", "builtin", "full"): (29_291, 0.353, 73.4),
    ("1.5B", "transformers", "full"): (28_658, 0.346, 72.3),
}
BASELINE_DECODE = {1: 14, 64: 808, 256: 2_780}  # sampled tokens/s, 0.5B, prompt 256
BASELINE_MATMUL_TFLOPS = 790  # bf16 8192^3 on the H200

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "qwen-shapes.json")) as _f:
    _SHAPES = json.load(_f)
QWEN = _SHAPES["sizes"]  # Qwen2.5 config.json fields that set the shape (shared with bench/gpu-run.ts)
COMMON = _SHAPES["common"]


SECTIONS = ("train", "decode", "fit", "parts")
DEFAULT_SECTIONS = ("train", "decode", "fit")  # parts measures one run's shapes: bench/gpu-run.ts asks for it


def main(argv: list) -> int:
    profile = "--profile" in argv
    json_out = argv[argv.index("--json") + 1] if "--json" in argv else None
    sections = [a for i, a in enumerate(argv) if not a.startswith("--") and (i == 0 or argv[i - 1] != "--json")]
    sections = sections or list(DEFAULT_SECTIONS)
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        print(f"bench/gpu.py: unknown section {unknown[0]!r}; sections are {', '.join(SECTIONS)} (default: train, decode, fit)")
        return 2
    if not torch.cuda.is_available():
        print("bench/gpu.py needs a CUDA GPU; this machine has none (torch sees no CUDA device). Nothing measured.")
        return 0
    from atk_trainer.model.modeling import transformers_available

    name = torch.cuda.get_device_name(0)
    peak = matmul_tflops()
    print(f"{name}, torch {torch.__version__}: bf16 matmul {peak:.0f} TFLOP/s (baseline H200: {BASELINE_MATMUL_TFLOPS})")
    print("ratios are to the first measurement on an H200 (docs/gpu.md); compare like cards only\n")
    failed = 0
    figures_out: dict = {"device": name, "matmul_tflops": peak}
    if "train" in sections:
        print("| model | backend | mode | positions/s | x first | MFU | x first | peak GiB | x first |")
        print("|---|---|---|---|---|---|---|---|---|")
        backends = ["builtin"] + (["transformers"] if transformers_available() else [])
        for size in ("0.5B", "1.5B"):
            for backend in backends:
                for mode in ("full", "lora"):
                    figures = measured(f"{size} {backend} {mode}", train_figures, size, backend, mode, peak)
                    if figures is None:
                        failed += 1
                        continue
                    rate, mfu, gib = figures
                    base = BASELINE_TRAIN.get((size, backend, mode))
                    ratios = ["-"] * 3 if base is None else [f"{rate / base[0]:.2f}", f"{mfu / base[1]:.2f}", f"{gib / base[2]:.2f}"]
                    print(f"| {size} | {backend} | {mode} | {rate:,.0f} | {ratios[0]} | {mfu:.1%} | {ratios[1]} | {gib:.1f} | {ratios[2]} |")
        print()
    if profile:
        for size in ("0.5B", "1.5B"):
            shares = measured(f"profile {size}", profile_train_step, size)
            if shares is None:
                failed += 1
                continue
            print(f"where a {size} builtin full training step's GPU time goes (torch.profiler, 32 x 1024 tokens):\n")
            print("| " + " | ".join(shares) + " |")
            print("|" + "---|" * len(shares))
            print("| " + " | ".join(f"{v:.1%}" for v in shares.values()) + " |\n")
    if "decode" in sections:
        print("| embedded engine, 0.5B, prompt 256 | decode step | batch 1 | batch 64 | batch 256 |")
        print("|---|---|---|---|---|")
        for decode_step in ("graphs", "dynamic"):  # CUDA graphs (the default on CUDA), then the eager step
            rates = measured(f"decode {decode_step}", decode_figures, decode_step=decode_step)
            if rates is None:
                failed += 1
                continue
            cells = [f"{rate:,.0f} (x{rate / BASELINE_DECODE[rows]:.1f})" for rows, rate in rates.items()]
            print(f"| sampled tokens/s (x first) | {decode_step} | " + " | ".join(cells) + " |")
        print()
    if "fit" in sections:
        fits = measured("largest LoRA fit", largest_lora_fit)
        failed += fits is None
        print(f"largest Qwen2.5 shape whose LoRA step (32 x 2048 tokens) fits: {fits or 'none'}")
    if "parts" in sections:
        shape = json.loads(os.environ.get("ATK_GPU_PARTS", "{}"))
        parts = measured("parts", parts_figures, **shape)
        failed += parts is None
        if parts is not None:
            figures_out["parts"] = parts
            print(f"parts alone at {shape}: " + ", ".join(f"{k} {v:.3g}" for k, v in parts.items()))
    if json_out:
        with open(json_out, "w") as f:
            json.dump(figures_out, f)
    return 1 if failed else 0


def measured(what: str, measure, *args, **kwargs):
    """One measurement, or None after printing why it failed: one broken figure must not cost the others
    (GPU time is scarce and each run is a fresh machine)."""
    try:
        return measure(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - reported, and the bench exits 1
        import traceback

        print(f"{what}: failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        traceback.print_exc(file=sys.stderr)
        release()
        return None


def matmul_tflops(n: int = 8192, seconds: float = 2.0) -> float:
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ b
        count += 1
    torch.cuda.synchronize()
    return 2 * n ** 3 * count / (time.perf_counter() - start) / 1e12


def cuda_policy(size: str, backend: str, device: str = "cuda"):
    """A random-weight policy of this Qwen2.5 shape, built on the GPU (seeded CPU init would take
    minutes for 7B; the weights' values do not change the speed or the memory)."""
    from atk_trainer.model.modeling import Policy, random_policy
    from atk_trainer.model.decoder import DecoderConfig, DecoderForCausalLM

    config = {**COMMON, **QWEN[size]}
    if backend == "transformers":
        return random_policy(config, backend="transformers", device=device)
    with torch.device(device) if device == "cuda" else contextlib.nullcontext():
        module = DecoderForCausalLM(DecoderConfig.from_dict(config))
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0.0, 0.02)
    return Policy(module.eval(), config, "builtin")


def batch(sequences: int, length: int, vocab: int):
    g = torch.Generator().manual_seed(0)
    prompt = length // 2
    rows = []
    for _ in range(sequences):
        ids = torch.randint(0, vocab, (length,), generator=g).tolist()
        mask = [0] * prompt + [1] * (length - prompt)
        rows.append({"token_ids": ids, "loss_mask": mask, "logprobs": [-1.0 * m for m in mask], "advantage": 0.5})
    return {"loss": "pg", "sequences": rows}


def train_figures(size: str, backend: str, mode: str, peak_tflops: float, steps: int = 3,
                  sequences: int = 32, length: int = 1024, device: str = "cuda"):
    """(positions/s, MFU, peak GiB) of `steps` train steps after one warm-up step."""
    from atk_trainer.train.config import parse_config
    from atk_trainer.train.train import Trainer

    release()
    policy = cuda_policy(size, backend, device)
    overrides = {"micro_batch_tokens": 8192, "learning_rate": 1e-6}
    if mode == "lora":
        overrides["lora"] = {"rank": 16, "alpha": 32}
    trainer = Trainer(policy, parse_config(overrides))
    data = batch(sequences, length, policy.config["vocab_size"])
    trainer.step(data)
    release()
    start = time.perf_counter()
    for _ in range(steps):
        trainer.step(data)
    synchronize()
    seconds = time.perf_counter() - start
    positions = sequences * length * steps / seconds
    c = policy.config
    matmul_params = sum(p.numel() for n, p in policy.module.named_parameters() if p.dim() == 2 and "embed_tokens" not in n)
    if c.get("tie_word_embeddings"):
        matmul_params += c["vocab_size"] * c["hidden_size"]  # the tied lm_head's matmul
    flops_per_position = 6 * matmul_params + 6 * c["num_hidden_layers"] * c["hidden_size"] * length
    mfu = positions * flops_per_position / (peak_tflops * 1e12)
    gib = peak_gib()
    del trainer, policy
    return positions, mfu, gib


def decode_figures(runs=((1, 128), (64, 256), (256, 256)), size: str = "0.5B", prompt: int = 256, device: str = "cuda",
                   decode_step: str = "graphs"):
    """Sampled tokens/s of the embedded engine per batch size in `runs` ((batch, new tokens)), serving
    bf16 weights as the control API does on CUDA, with this decode step (static_decode.py): "graphs"
    (captured per batch bucket; the warm-up request captures bucket 1) or "dynamic" (eager)."""
    from atk_trainer.serve.engine import Engine
    from atk_trainer.serve.sampling_params import SamplingParams

    release()
    policy = cuda_policy(size, "builtin", device)
    policy.module.to(torch.bfloat16)
    vocab = policy.config["vocab_size"]
    engine = Engine(max_batch=256)
    engine.set_policy(policy, decode_step=decode_step)
    engine.start()
    figures = {}
    try:
        engine.generate(list(range(1, prompt + 1)), SamplingParams(max_tokens=8, ignore_eos=True))  # warm-up
        for rows, new in runs:
            params = SamplingParams(max_tokens=new, temperature=1.0, ignore_eos=True)
            start = time.perf_counter()
            requests = [engine.submit([(7 * r + t) % (vocab - 1) + 1 for t in range(prompt)], params) for r in range(rows)]
            sampled = sum(len(req.wait(1800)[0].token_ids) for req in requests)
            figures[rows] = sampled / (time.perf_counter() - start)
    finally:
        engine.close()
    del policy
    return figures


def largest_lora_fit():
    """The largest shape whose LoRA r16 train step at 32 x 2048 tokens (micro_batch_tokens left to the
    trainer) runs without running out of memory."""
    from atk_trainer.train.config import parse_config
    from atk_trainer.train.memory import TrainerOutOfMemory
    from atk_trainer.train.train import Trainer

    fits = None
    for size in ("0.5B", "1.5B", "3B", "7B"):
        release()
        try:
            policy = cuda_policy(size, "builtin")
            trainer = Trainer(policy, parse_config({"lora": {"rank": 16, "alpha": 32}, "learning_rate": 1e-6}))
            trainer.step(batch(32, 2048, policy.config["vocab_size"]))
            fits = size
            print(f"  {size}: fits (micro_batch_tokens {trainer.micro_batch_tokens}, peak {peak_gib():.1f} GiB)")
        except (TrainerOutOfMemory, torch.cuda.OutOfMemoryError) as e:
            print(f"  {size}: does not fit ({str(e).splitlines()[0][:120]})")
            break
        finally:
            trainer = policy = None
    return fits or "none"


def parts_figures(size: str = "1.5B", lora_rank: int = 32, train_rows: int = 256, train_length: int = 768,
                  decode_batch: int = 256, prompt: int = 256, new_tokens: int = 512, device: str = "cuda"):
    """The parts of one `atk run` step measured alone, at that run's shapes (bench/gpu-run.ts passes them):
    one LoRA train step over `train_rows` x `train_length` tokens, and `decode_batch` rows of `prompt`
    tokens sampling `new_tokens` each on the embedded engine (CUDA graphs). Seconds, not rates."""
    from atk_trainer.train.config import parse_config
    from atk_trainer.train.train import Trainer

    release()
    policy = cuda_policy(size, "builtin", device)
    trainer = Trainer(policy, parse_config({"learning_rate": 1e-6, "lora": {"rank": lora_rank, "alpha": 2 * lora_rank}}))
    data = batch(train_rows, train_length, policy.config["vocab_size"])
    trainer.step(data)  # warm-up: allocator, kernels
    synchronize()
    start = time.perf_counter()
    trainer.step(data)
    synchronize()
    train_s = time.perf_counter() - start
    del trainer, policy
    rate = decode_figures(runs=((decode_batch, new_tokens),), size=size, prompt=prompt, device=device)[decode_batch]
    return {"train_s": train_s, "decode_s": decode_batch * new_tokens / rate, "peak_gib": peak_gib()}


# torch.profiler kernel and op names -> where a training step's GPU time goes. CUDA kernel names (cutlass,
# sm90_xmma_gemm, flash_fwd, vectorized_elementwise_kernel, multi_tensor_apply) and, on CPU, aten op names.
KERNEL_CATEGORIES = (
    ("optimizer", ("adam", "multi_tensor_apply", "foreach")),
    ("attention", ("flash", "fmha", "attention", "sdpa", "softmax")),
    ("matmul", ("gemm", "cutlass", "cublas", "xmma", "matmul", "aten::mm", "aten::addmm", "aten::bmm", "aten::linear")),
    ("elementwise/norm", ("elementwise", "vectorized", "reduce", "norm", "rms", "aten::", "triton", "cat", "copy")),
)


def kernel_category(name: str) -> str:
    lowered = name.lower()
    for category, needles in KERNEL_CATEGORIES:
        if any(n in lowered for n in needles):
            return category
    return "other"


def time_shares(kernels, wall_us: float) -> dict:
    """Shares of `wall_us` per category from (name, start_us, duration_us) kernels, plus "idle": the time no
    kernel ran (the union of kernel intervals, so overlapping kernels are not counted twice)."""
    shares = {c: 0.0 for c, _ in KERNEL_CATEGORIES}
    shares["other"] = 0.0
    for name, _, duration in kernels:
        shares[kernel_category(name)] += duration
    busy, end = 0.0, float("-inf")
    for _, start, duration in sorted(kernels, key=lambda k: k[1]):
        busy += max(0.0, start + duration - max(start, end))
        end = max(end, start + duration)
    total = sum(shares.values()) or 1.0
    result = {c: (v / total) * (busy / wall_us) for c, v in shares.items()} if wall_us > 0 else shares
    result["idle"] = max(0.0, 1.0 - busy / wall_us) if wall_us > 0 else 0.0
    return result


def profile_train_step(size: str, device: str = "cuda", sequences: int = 32, length: int = 1024) -> dict:
    """One full fine-tuning step (after a warm-up) under torch.profiler: its kernels by category."""
    from torch.profiler import ProfilerActivity, profile

    from atk_trainer.train.config import parse_config
    from atk_trainer.train.train import Trainer

    release()
    policy = cuda_policy(size, "builtin", device)
    trainer = Trainer(policy, parse_config({"micro_batch_tokens": 8192, "learning_rate": 1e-6}))
    data = batch(sequences, length, policy.config["vocab_size"])
    trainer.step(data)
    synchronize()
    activity = ProfilerActivity.CUDA if device == "cuda" else ProfilerActivity.CPU
    start = time.perf_counter()
    with profile(activities=[activity]) as prof:
        trainer.step(data)
        synchronize()
    wall_us = (time.perf_counter() - start) * 1e6
    del trainer, policy
    wanted = "cuda" if device == "cuda" else "cpu"
    kernels = [
        (e.name, e.time_range.start, e.time_range.elapsed_us())
        for e in prof.events()
        if str(e.device_type).lower().endswith(wanted) and (device != "cpu" or e.cpu_parent is None)
    ]
    return time_shares(kernels, wall_us)


def release() -> None:
    """Free what the previous measurement left and restart the peak-memory count (after a sync)."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def synchronize() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def peak_gib() -> float:
    return torch.cuda.max_memory_allocated() / (1 << 30) if torch.cuda.is_available() else 0.0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
