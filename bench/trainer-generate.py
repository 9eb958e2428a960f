"""Generation throughput of the embedded engine on a small qwen2
(d=128, 4 layers, 4 heads, 263-token vocabulary, ~0.89M parameters): sampled tokens/s at batch 1
and 32, through the engine (KV cache, continuous batching) and by full forward passes without a
cache, with 1 and 2 torch threads, each as a fraction of the machine's measured fp32 matmul rate;
and 128 clients each running a 3-turn episode (every turn a new, longer request, so requests join
and leave the running batch all the time, as in RL rollouts), also per CPU-second of this process
(steadier than wall time on a shared machine); and one admission wave of unlike prompt lengths
prefilled in length buckets against padded to the longest.

    /usr/bin/python3 bench/trainer-generate.py      (or: npm run bench -- trainer-generate)

FLOPs counted: 2 per parameter per token position processed (the tied lm_head's matmul included,
attention scores left out: small at these lengths). "useful" counts the positions a KV-cache engine
must process (each prompt once, each sampled token once); "executed" what the method actually ran.
"""
import importlib.util
import os
import random
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "trainer"))

import torch  # noqa: E402

from atk_trainer.serve import decoders  # noqa: E402
from atk_trainer.serve.engine import Engine  # noqa: E402
from atk_trainer.serve.sampling_params import SamplingParams  # noqa: E402
from atk_trainer.model.modeling import random_policy  # noqa: E402

# The probe's model and the matmul ceiling are defined once, in the training bench.
_spec = importlib.util.spec_from_file_location("trainer_train_bench", os.path.join(HERE, "trainer-train.py"))
_train_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_train_bench)
SMALL, matmul_flops = _train_bench.SMALL, _train_bench.matmul_flops

PROMPT, NEW = 40, 50  # the probe's episodes: ~40 prompt tokens, ~50 generated


def prompts(batch):
    return [[(7 * b + 3 * t) % SMALL["vocab_size"] for t in range(PROMPT)] for b in range(batch)]


def engine_rate(policy, batch):
    """Sampled tokens/s through the engine: `batch` concurrent requests of NEW tokens each."""
    engine = Engine(max_batch=256)
    engine.set_policy(policy)
    engine.start()
    params = SamplingParams(max_tokens=NEW, temperature=1.0, ignore_eos=True)
    engine.generate(prompts(1)[0], SamplingParams(max_tokens=4, ignore_eos=True))  # warm-up
    start = time.perf_counter()
    requests = [engine.submit(p, params) for p in prompts(batch)]
    sampled = sum(len(r.wait()[0].token_ids) for r in requests)
    seconds = time.perf_counter() - start
    engine.close()
    return sampled / seconds, batch * (PROMPT + NEW) / seconds  # tokens/s, positions/s


@torch.no_grad()
def no_cache_rate(policy, batch, budget_s=4.0):
    """Sampled tokens/s re-running the whole sequence for every new token (what the cache saves);
    stops after `budget_s`, so the rate is over the first steps (shorter sequences) when it is slow."""
    ids = torch.tensor(prompts(batch))
    policy.logits(ids[:, :4])  # warm-up
    executed = steps = 0
    start = time.perf_counter()
    while steps < NEW and time.perf_counter() - start < budget_s:
        steps += 1
        logits = policy.logits(ids)[:, -1]  # (B, V)
        executed += ids.numel()
        ids = torch.cat([ids, torch.multinomial(torch.softmax(logits, -1), 1)], dim=1)
    seconds = time.perf_counter() - start
    return batch * steps / seconds, executed / seconds


def multi_turn_rate(policy, clients, turns=3):
    """(sampled tokens/s, per CPU-second) of `clients` threads each running a `turns`-turn episode:
    every turn sends the context so far (prompt, completions, 8 tool-result tokens) as a new request."""
    engine = Engine(max_batch=256)
    engine.set_policy(policy)
    engine.start()
    sampled = [0] * clients

    def episode(i):
        rng = random.Random(i)
        context = [rng.randrange(SMALL["vocab_size"]) for _ in range(PROMPT)]
        for _ in range(turns):
            (c,) = engine.generate(context, SamplingParams(max_tokens=rng.randint(8, 40), ignore_eos=True), 600)
            sampled[i] += len(c.token_ids)
            context = context + c.token_ids + [rng.randrange(SMALL["vocab_size"]) for _ in range(8)]

    threads = [threading.Thread(target=episode, args=(i,)) for i in range(clients)]
    wall, cpu = time.perf_counter(), time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    engine.close()
    return sum(sampled) / wall, sum(sampled) / cpu


@torch.no_grad()
def admission_ms(policy, short=80, short_tokens=16, long_tokens=128, repeats=5):
    """Median ms to prefill one admission wave: `short` prompts of `short_tokens` and one of `long_tokens`
    (a tool error message among continuations, as RL rollouts send them), in length buckets
    (decoders.length_buckets) and, the baseline, all padded to the longest in one forward."""
    wave = [[(5 * b + t) % SMALL["vocab_size"] for t in range(short_tokens)] for b in range(short)]
    wave.append([t % SMALL["vocab_size"] for t in range(long_tokens)])
    bucketing = decoders.length_buckets
    times = {}
    for name, buckets in (("bucketed", bucketing), ("padded", lambda lengths: [list(range(len(lengths)))])):
        decoders.length_buckets = buckets
        runs = []
        for _ in range(repeats + 1):  # the first warms up
            decoder = decoders.make_decoder(policy)
            start = time.perf_counter()
            decoder.prefill(wave, 32)
            runs.append((time.perf_counter() - start) * 1000)
        times[name] = sorted(runs[1:])[repeats // 2]
    decoders.length_buckets = bucketing
    return times["bucketed"], times["padded"]


def main():
    policy = random_policy(dict(SMALL), seed=0)
    params = sum(p.numel() for p in policy.module.parameters())
    print(f"torch {torch.__version__}, {params:,} parameters, prompt {PROMPT} + {NEW} sampled tokens per sequence")
    for threads in (1, 2):
        peak = matmul_flops(threads, "cpu")
        torch.set_num_threads(threads)
        print(f"threads={threads}: fp32 matmul {peak / 1e9:.0f} GFLOP/s")
        for batch in (1, 32):
            tokens, useful = engine_rate(policy, batch)
            print(f"  engine (KV cache)  batch {batch:>2}: {tokens:>8,.0f} sampled tokens/s | "
                  f"useful {2 * params * useful / peak:6.2%} of matmul rate")
            tokens, executed = no_cache_rate(policy, batch)
            useful = tokens * (PROMPT + NEW) / NEW
            print(f"  no cache (full fwd) batch {batch:>2}: {tokens:>8,.0f} sampled tokens/s | "
                  f"useful {2 * params * useful / peak:6.2%}, executed {2 * params * executed / peak:6.2%} of matmul rate")
        tokens, per_cpu = multi_turn_rate(policy, 128)
        print(f"  engine, 128 clients x 3 turns: {tokens:>8,.0f} sampled tokens/s ({per_cpu:,.0f} per CPU-second)")
        bucketed, padded = admission_ms(policy)
        print(f"  prefill of 80 x 16-token prompts + 1 x 128: {bucketed:.1f} ms in length buckets, "
              f"{padded:.1f} ms padded to the longest ({padded / bucketed:.1f}x)")


if __name__ == "__main__":
    main()
