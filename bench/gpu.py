"""The bundled trainer and embedded engine on one CUDA GPU, next to the first measurement (an H200,
trainer at commit 415c3f2): training positions/s, MFU against the measured bf16 matmul rate and peak
memory for Qwen2.5-0.5B and 1.5B shapes with random weights (builtin and, when installed, transformers;
full and LoRA r16), decode tokens/s at batch 1, 64 and 256 with the decode step captured as CUDA graphs
(capture time included) and with the eager (dynamic) step, and the largest Qwen2.5 shape whose LoRA
step at 32 x 2048 tokens fits in the card's memory. Each figure is printed with its ratio to the baseline.

    /usr/bin/python3 bench/gpu.py [train] [decode] [fit]      (or: npm run bench gpu; default: all three)

On a machine without CUDA it says so and exits 0. Settings match the baseline's: 32 sequences x 1024
tokens (512 prompt + 512 trained), micro_batch_tokens 8192, bf16 autocast; MFU counts 6 x matmul
parameters (lm_head included) per position plus causal attention.
"""
import contextlib
import gc
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

QWEN = {  # Qwen2.5 config.json fields that set the shape
    "0.5B": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "1.5B": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "3B": dict(hidden_size=2048, intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16, num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "7B": dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4, vocab_size=152064, tie_word_embeddings=False),
}
COMMON = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "max_position_embeddings": 32768,
          "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "torch_dtype": "bfloat16", "eos_token_id": 151645}


SECTIONS = ("train", "decode", "fit")


def main(argv: list) -> int:
    sections = argv or list(SECTIONS)
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        print(f"bench/gpu.py: unknown section {unknown[0]!r}; sections are {', '.join(SECTIONS)} (default: all)")
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
    if "train" in sections:
        print(f"{'model':6} {'backend':13} {'mode':5} {'positions/s':>12} {'x':>6} {'MFU':>6} {'x':>6} {'peak GiB':>9} {'x':>6}")
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
                    print(f"{size:6} {backend:13} {mode:5} {rate:>12,.0f} {ratios[0]:>6} {mfu:>6.1%} {ratios[1]:>6} {gib:>9.1f} {ratios[2]:>6}")
        print()
    if "decode" in sections:
        for decode_step in ("graphs", "dynamic"):  # CUDA graphs (the default on CUDA), then the eager step
            rates = measured(f"decode {decode_step}", decode_figures, decode_step=decode_step)
            if rates is None:
                failed += 1
                continue
            for rows, rate in rates.items():
                print(f"decode 0.5B builtin {decode_step:7} batch {rows:>3}: {rate:>9,.0f} sampled tokens/s  x{rate / BASELINE_DECODE[rows]:.1f}")
        print()
    if "fit" in sections:
        fits = measured("largest LoRA fit", largest_lora_fit)
        failed += fits is None
        print(f"largest Qwen2.5 shape whose LoRA step (32 x 2048 tokens) fits: {fits or 'none'}")
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
    from atk_trainer.model.qwen2 import Qwen2Config, Qwen2ForCausalLM

    config = {**COMMON, **QWEN[size]}
    if backend == "transformers":
        return random_policy(config, backend="transformers", device=device)
    with torch.device(device) if device == "cuda" else contextlib.nullcontext():
        module = Qwen2ForCausalLM(Qwen2Config.from_dict(config))
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
