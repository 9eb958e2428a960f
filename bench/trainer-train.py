"""Training throughput of the bundled trainer on a small qwen2
(d=128, 4 layers, 263-token vocabulary, ~0.89M parameters), with 1 and 2 torch threads, and as a
fraction of the fp32 matmul rate measured on this machine (the physical-limit ratio; MFU on GPU).

    /usr/bin/python3 bench/trainer-train.py      (or: npm run bench -- trainer-train)
"""
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trainer"))

import torch  # noqa: E402

from atk_trainer.train.config import parse_config  # noqa: E402
from atk_trainer.model.modeling import random_policy  # noqa: E402
from atk_trainer.train.train import Trainer  # noqa: E402

SMALL = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 263, "hidden_size": 128,
    "intermediate_size": 384, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 4,
    "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": True,
    "torch_dtype": "float32",
}
SEQUENCES, PROMPT, LENGTH = 16, 40, 90  # one GRPO step of the probe: ~90-token transcripts, ~50 generated


def matmul_flops(threads, device, dtype=torch.float32, n=1024, seconds=1.0):
    """Sustained FLOP/s of an n x n matmul: the machine's practical ceiling for this model's work."""
    torch.set_num_threads(threads)
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ b
        count += 1
    if device == "cuda":
        torch.cuda.synchronize()
    return 2 * n**3 * count / (time.perf_counter() - start)


def batch(rng):
    seqs = []
    for _ in range(SEQUENCES):
        n = LENGTH + rng.randint(-10, 9)
        ids = [rng.randrange(SMALL["vocab_size"]) for _ in range(n)]
        mask = [0] * PROMPT + [1] * (n - PROMPT)
        seqs.append({"token_ids": ids, "loss_mask": mask, "logprobs": [-5.5 * m for m in mask], "advantage": rng.uniform(-1, 1)})
    return {"loss": "pg", "sequences": seqs}


def train_rate(threads, device, overrides, steps=8):
    torch.set_num_threads(threads)
    policy = random_policy(dict(SMALL), seed=0)
    policy.module.to(device)
    trainer = Trainer(policy, parse_config({"learning_rate": 1e-4, "threads": threads, **overrides}))
    rng = random.Random(0)
    trainer.step(batch(rng))  # warm-up: allocator, first-call overheads
    trained = positions = 0
    start = time.perf_counter()
    for _ in range(steps):
        m = trainer.step(batch(rng))
        trained += m["tokens"]
        positions += m["padded_tokens"]
    seconds = time.perf_counter() - start
    params = sum(p.numel() for p in policy.module.parameters())
    return trained / seconds, positions / seconds, params


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"device {device}, torch {torch.__version__}, batch {SEQUENCES} x ~{LENGTH} tokens ({LENGTH - PROMPT} trained)")
    for threads in (1, 2) if device == "cpu" else (1,):
        peak = matmul_flops(threads, device)
        trained, positions, params = train_rate(threads, device, {"threads": threads})
        # Forward + backward is ~6 FLOPs per parameter per position (the tied lm_head counted once,
        # attention scores left out: small at 90 tokens).
        achieved = 6 * params * positions
        print(
            f"threads={threads}: fp32 matmul {peak / 1e9:.0f} GFLOP/s | train {trained:,.0f} trained tokens/s, "
            f"{positions:,.0f} positions/s | {achieved / 1e9:.1f} GFLOP/s = {achieved / peak:.1%} of matmul rate"
        )
    if device == "cuda":
        peak = matmul_flops(1, device, torch.bfloat16, n=8192)
        for name, overrides in (("full", {}), ("lora", {"lora": {"rank": 16}})):
            trained, positions, params = train_rate(1, device, {"dtype": "bfloat16", **overrides})
            print(f"cuda bf16 {name}: {positions:,.0f} positions/s, MFU vs measured bf16 matmul {6 * params * positions / peak:.2%}")


if __name__ == "__main__":
    main()
