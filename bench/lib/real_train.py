"""The trainer's side of `npm run bench real`, run by the trainer's own Python (torch as users run it). Two commands,
each printing one JSON line:

  matmul --threads N          the machine's float32 matmul ceiling through this torch: the best GFLOP/s of a square
                              matmul and of the linear shapes of a SmolLM2 train step
  train --model DIR --mode full|lora --threads N --sequences S --length T --prompt P --steps K
                              train steps of atk's Trainer on S sequences of ~T tokens (the last T - P trained),
                              the first a warm-up; tokens/s, GFLOP/s counted as 6 (full) or 4 (LoRA: no weight
                              gradients for the frozen base) FLOPs per weight per position, CPU seconds, peak RSS
  --profile adds the step's ten costliest torch ops (self CPU time) to the train line.
  adapter --model DIR --out DIR
                              a LoRA checkpoint (rank 16, as atk's recipes default) after one update, so its
                              adapter is not the identity: what the eval with an adapter loads
"""
import argparse
import json
import os
import random
import resource
import sys
import time

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "trainer")
)

import atk_trainer  # noqa: E402,F401 - picks OpenBLAS's kernels before torch loads it (openblas_core.py)
import torch  # noqa: E402


def matmul(args):
    torch.set_num_threads(args.threads)
    # (M, K, N): a square matmul, then SmolLM2's projections and lm_head over a micro-batch of 2048 positions
    shapes = [
        (1024, 1024, 1024),
        (2048, 576, 1536),
        (2048, 1536, 576),
        (2048, 576, 576),
        (2048, 576, 49152),
    ]
    best = {}
    for m, k, n in shapes:
        a, b = torch.randn(m, k), torch.randn(k, n)
        a @ b
        rate = per_cpu = 0.0
        for _ in range(
            3
        ):  # best of three: another process on the machine slows some, never speeds one up
            count, cpu_start, start = 0, time.process_time(), time.perf_counter()
            while time.perf_counter() - start < args.seconds / 3:
                a @ b
                count += 1
            rate = max(rate, 2 * m * k * n * count / (time.perf_counter() - start))
            per_cpu = max(
                per_cpu,
                2 * m * k * n * count / max(time.process_time() - cpu_start, 1e-9),
            )
        best[f"{m}x{k}x{n}"] = {"gflops": rate / 1e9, "gflops_per_cpu_s": per_cpu / 1e9}
    figures = {
        key: max(shape[key] for shape in best.values())
        for key in ("gflops", "gflops_per_cpu_s")
    }
    print(json.dumps({"threads": args.threads, **figures, "shapes": best}))


def batch(rng, sequences, length, prompt, vocab):
    seqs = []
    for _ in range(sequences):
        n = length + rng.randint(-length // 10, length // 10)
        mask = [0] * prompt + [1] * (n - prompt)
        advantage = rng.uniform(-1, 1)
        seqs.append(
            {
                "token_ids": [rng.randrange(3, vocab) for _ in range(n)],
                "loss_mask": mask,
                "logprobs": [-2.0 * m for m in mask],
                "advantages": [advantage * m for m in mask],
            }
        )
    return {"loss": "pg", "sequences": seqs}


def train(args):
    from atk_trainer.model.modeling import load_policy
    from atk_trainer.train.config import parse_config
    from atk_trainer.train.train import Trainer

    torch.set_num_threads(args.threads)
    policy = load_policy(args.model, backend="builtin")
    weights = sum(
        p.numel()
        for name, p in policy.module.named_parameters()
        if "embed_tokens" not in name
    )
    if policy.config.get(
        "tie_word_embeddings"
    ):  # the tied lm_head is a matmul every position runs
        weights += policy.module.lm_head.weight.numel()
    overrides = {"learning_rate": 1e-5, "threads": args.threads}
    if args.mode == "lora":
        overrides["lora"] = {"rank": args.lora_rank}
    trainer = Trainer(policy, parse_config(overrides))
    rng = random.Random(0)
    vocab = int(policy.config["vocab_size"])
    trainer.step(
        batch(rng, args.sequences, args.length, args.prompt, vocab)
    )  # warm-up: allocator, first calls
    steps, positions, trained, wall, cpu = [], 0, 0, 0.0, 0.0
    profile = None
    for i in range(args.steps):
        body = batch(rng, args.sequences, args.length, args.prompt, vocab)
        cpu_start, start = time.process_time(), time.perf_counter()
        if args.profile and i == args.steps - 1:
            from torch.profiler import ProfilerActivity, profile as torch_profile

            with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
                m = trainer.step(body)
            profile = [
                {
                    "op": e.key,
                    "self_cpu_s": e.self_cpu_time_total / 1e6,
                    "calls": e.count,
                }
                for e in sorted(
                    prof.key_averages(), key=lambda e: -e.self_cpu_time_total
                )[:10]
            ]
        else:
            m = trainer.step(body)
        wall += time.perf_counter() - start
        cpu += time.process_time() - cpu_start
        positions += m["padded_tokens"]
        trained += m["tokens"]
        steps.append(round(m["seconds"], 2))
    flops_per_position = (6 if args.mode == "full" else 4) * weights
    figures = {
        "mode": args.mode,
        "threads": args.threads,
        "step_seconds": steps,
        "positions_per_s": positions / wall,
        "trained_tokens_per_s": trained / wall,
        "gflops": flops_per_position * positions / wall / 1e9,
        "gflops_per_cpu_s": flops_per_position * positions / cpu / 1e9,
        "cpu_s": cpu,
        "wall_s": wall,
        "micro_batch_tokens": trainer.micro_batch_tokens,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "torch": torch.__version__,
        "openblas_core": os.environ.get("OPENBLAS_CORETYPE"),
    }
    if profile is not None:
        figures["profile"] = profile
    print(json.dumps(figures))


def adapter(args):
    from atk_trainer.model.modeling import load_policy
    from atk_trainer.train.config import parse_config
    from atk_trainer.train.train import Trainer

    policy = load_policy(args.model, backend="builtin")
    trainer = Trainer(
        policy, parse_config({"learning_rate": 1e-4, "lora": {"rank": 16}})
    )
    trainer.step(batch(random.Random(0), 4, 64, 16, int(policy.config["vocab_size"])))
    print(json.dumps(trainer.save(args.out)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    m = commands.add_parser("matmul")
    m.add_argument("--threads", type=int, required=True)
    m.add_argument("--seconds", type=float, default=3.0, help="per shape")
    t = commands.add_parser("train")
    t.add_argument("--model", required=True)
    t.add_argument("--mode", choices=["full", "lora"], required=True)
    t.add_argument("--threads", type=int, required=True)
    t.add_argument("--sequences", type=int, required=True)
    t.add_argument("--length", type=int, required=True)
    t.add_argument("--prompt", type=int, required=True)
    t.add_argument("--steps", type=int, default=2)
    t.add_argument("--lora-rank", type=int, default=16)
    t.add_argument("--profile", action="store_true")
    a = commands.add_parser("adapter")
    a.add_argument("--model", required=True)
    a.add_argument("--out", required=True)
    args = parser.parse_args()
    {"matmul": matmul, "train": train, "adapter": adapter}[args.command](args)


if __name__ == "__main__":
    main()
