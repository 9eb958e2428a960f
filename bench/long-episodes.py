"""Prefill tokens per turn of conversations run past a sliding-window budget, through the embedded
engine (the trainer's Engine, models/tiny-arith on CPU), with the engine's prefix reuse on the longest
common prefix against what it did before (a finished sequence reused only when the new prompt continues
it whole), against no prefix cache at all (every prompt computed whole), and with the cache held to what
64 MiB, its old fixed size, holds of Qwen3-4B's bf16 keys and values (455 tokens; model.engine.
prefix_cache_tokens now scales with free memory: serve/prefix_budget.py).

    /usr/bin/python3 bench/long-episodes.py      (or: npm run bench long-episodes)

The conversations have the shape agent.context.strategy sliding_window gives them (src/agent/
long-episode.ts, drop: turns): a head (a system prompt every episode shares, then the episode's task)
always kept; each turn the model's reply and a tool result; once the prompt passes the budget, only the
last turns that fit (at most keep_last_turns) stay after the head, and the episode goes on in a new
segment, whose prompt shares the head with the sequence the engine cached but does not extend it. The
counts are the engine's own (Engine.stats(): prefilled_tokens), not computed here.
"""
import os
import random
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "trainer"))

import torch  # noqa: E402

from atk_trainer.model.modeling import load_policy  # noqa: E402
from atk_trainer.serve import decoders  # noqa: E402
from atk_trainer.serve.engine import Engine  # noqa: E402
from atk_trainer.serve.sampling_params import SamplingParams  # noqa: E402

MODEL = os.path.join(HERE, "..", "models", "tiny-arith")
EPISODES, TURNS = 8, 24  # conversations decoded together, model turns each
SYSTEM, TASK, REPLY, TOOL_RESULT = 48, 24, 24, 32  # tokens
BUDGET, KEEP_LAST_TURNS = 360, 4  # agent.context.budget_tokens, keep_last_turns
OLD_QWEN3_4B_TOKENS = (64 << 20) // (36 * 2 * 8 * 128 * 2)  # 64 MiB / (layers x (k, v) x kv heads x head_dim x bf16)


class ContinuationOnly(decoders.BuiltinDecoder):
    """The engine before longest-common-prefix reuse: a parked sequence serves a prompt only when the
    prompt continues it whole."""

    def _parked_prefix(self, prompt):
        i, n = super()._parked_prefix(prompt)
        return (i, n) if i is not None and n == len(self.parked[i].tokens) else (None, 0)


def window(head, turns):
    """Head plus the last turns that fit BUDGET, at most KEEP_LAST_TURNS (at least the last one)."""
    for k in range(min(KEEP_LAST_TURNS, len(turns)), 0, -1):
        prompt = head + [t for turn in turns[-k:] for t in turn]
        if len(prompt) <= BUDGET:
            return prompt, turns[-k:]
    return head + turns[-1], turns[-1:]


def episode(engine, index, vocab, per_turn):
    """One conversation; appends (turn, prompt tokens, prefilled tokens, segment boundary) per turn."""
    rng = random.Random(index)
    system = [random.Random(-1).randrange(vocab) for _ in range(SYSTEM)]  # the same for every episode
    head = system + [rng.randrange(vocab) for _ in range(TASK)]
    turns, previous = [], None  # turns in the current segment; the last sequence sent (prompt + reply)
    for turn in range(TURNS):
        prompt = head + [t for turn_tokens in turns for t in turn_tokens]
        if len(prompt) > BUDGET:
            prompt, turns = window(head, turns)
        boundary = previous is not None and prompt[: len(previous)] != previous
        params = SamplingParams(max_tokens=REPLY, temperature=1.0, seed=1000 * index + turn, ignore_eos=True)
        (completion,) = engine.generate(prompt, params)
        per_turn.append((turn, len(prompt), len(prompt) - completion.cached_tokens, boundary))
        previous = prompt + completion.token_ids
        turns = turns + [completion.token_ids + [rng.randrange(vocab) for _ in range(TOOL_RESULT)]]


def run(decoder_class, prefix_cache_tokens=None):
    """Every episode through a fresh engine whose decoder is `decoder_class` (its prefix cache holding
    `prefix_cache_tokens`, None: the default); per-turn rows and its stats."""
    policy = load_policy(MODEL)
    vocab = policy.config["vocab_size"]
    saved, decoders.BuiltinDecoder = decoders.BuiltinDecoder, decoder_class
    engine = Engine(prefix_cache_tokens=prefix_cache_tokens)
    engine.set_policy(policy)
    engine.start()
    per_turn = []
    try:
        threads = [threading.Thread(target=episode, args=(engine, i, vocab, per_turn)) for i in range(EPISODES)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return per_turn, engine.stats()
    finally:
        engine.close()
        decoders.BuiltinDecoder = saved


def main():
    torch.set_num_threads(1)
    print(
        f"{EPISODES} conversations x {TURNS} turns on models/tiny-arith (CPU): head {SYSTEM}+{TASK} tokens, "
        f"{REPLY}-token replies, {TOOL_RESULT}-token tool results, sliding window at {BUDGET} tokens "
        f"keeping <= {KEEP_LAST_TURNS} turns"
    )
    rows = {}
    cases = (
        ("longest common prefix", decoders.BuiltinDecoder, None),
        ("continuation only", ContinuationOnly, None),
        ("64 MiB of Qwen3-4B", decoders.BuiltinDecoder, OLD_QWEN3_4B_TOKENS),
    )
    for name, cls, tokens in cases:
        per_turn, stats = run(cls, tokens)
        assert stats["prefilled_tokens"] == sum(p for _, _, p, _ in per_turn)  # the engine's counter, per turn
        rows[name] = per_turn
    lcp, old, small = rows["longest common prefix"], rows["continuation only"], rows["64 MiB of Qwen3-4B"]
    prompts = sum(n for _, n, _, _ in lcp)
    turns = len(lcp)
    boundaries = [r for r in lcp if r[3]]
    old_boundaries = [r for r in old if r[3]]
    small_boundaries = [r for r in small if r[3]]
    print(f"segment boundaries (window rewrites): {len(boundaries)} of {turns} turns")
    print(f"{'':<28}{'per turn':>10}{'per rewrite turn':>18}")
    print(
        f"{'no prefix cache':<28}{prompts / turns:>10.1f}{sum(n for _, n, _, _ in boundaries) / len(boundaries):>18.1f}"
    )
    for name, rs, bs in (
        ("continuation only (before)", old, old_boundaries),
        (f"cache of {OLD_QWEN3_4B_TOKENS} tokens", small, small_boundaries),
        ("longest common prefix", lcp, boundaries),
    ):
        print(f"{name:<28}{sum(p for _, _, p, _ in rs) / turns:>10.1f}{sum(p for _, _, p, _ in bs) / len(bs):>18.1f}")
    per_turn_ratio = sum(p for _, _, p, _ in old) / sum(p for _, _, p, _ in lcp)
    rewrite_ratio = sum(p for _, _, p, _ in old_boundaries) / sum(p for _, _, p, _ in boundaries)
    print(
        f"prefill tokens, continuation only / longest common prefix: {per_turn_ratio:.2f}x per turn, "
        f"{rewrite_ratio:.2f}x at the rewrite turns"
    )
    small_ratio = sum(p for _, _, p, _ in small) / sum(p for _, _, p, _ in lcp)
    print(f"prefill tokens, a cache of {OLD_QWEN3_4B_TOKENS} tokens / the default cache: {small_ratio:.2f}x per turn")


if __name__ == "__main__":
    main()
