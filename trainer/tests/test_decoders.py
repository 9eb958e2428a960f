"""BuiltinDecoder: rows retire and join in any order and every running row still gets the logits of a
full forward pass over its own sequence; a prompt that continues a finished sequence computes only its
new tokens, and one that shares only a prefix with it (a rewritten conversation) only what follows the
longest common prefix, in the decoder and through the engine, until the weights change."""
import random

import pytest
import torch

from atk_trainer.serve.decoders import BuiltinDecoder, length_buckets
from atk_trainer.serve.engine import Engine
from atk_trainer.serve.sampling_params import SamplingParams
from atk_trainer.serve.static_decode import StaticDecodeStep
from atk_trainer.model.modeling import random_policy

CONFIG = {
    "model_type": "qwen2",
    "vocab_size": 40,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 256,
    "tie_word_embeddings": False,
}
# Layer 1 attends to its last 5 tokens only: the window has to follow each row through joins, masked gaps
# and compaction.
SLIDING = {**CONFIG, "use_sliding_window": True, "sliding_window": 5, "max_window_layers": 1}
# The other built-in architectures: qwen3's per-head q/k norms, llama's Llama 3 rope, mistral's every-layer window.
QWEN3 = {**CONFIG, "model_type": "qwen3", "head_dim": 16}
LLAMA = {
    **CONFIG,
    "model_type": "llama",
    "rope_theta": 5e5,
    "rope_scaling": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 32,
    },
}
MISTRAL = {**CONFIG, "model_type": "mistral", "sliding_window": 5}
CONFIGS = pytest.mark.parametrize(
    "config", [CONFIG, SLIDING, QWEN3, LLAMA, MISTRAL], ids=["full", "sliding-window", "qwen3", "llama", "mistral"]
)


def recording(module):
    """Record the token count T of every forward the module runs."""
    widths, forward = [], module.forward

    def record(ids, *args, **kwargs):
        widths.append(ids.shape[1])
        return forward(ids, *args, **kwargs)

    module.forward = record
    return widths


def check(policy, logits, seqs):
    assert logits.shape[0] == len(seqs)
    for row, seq in zip(logits, seqs):
        full = policy.logits(torch.tensor([seq]))[0, -1]
        assert torch.allclose(row, full, atol=1e-5), (seq, (row - full).abs().max())


@CONFIGS
@pytest.mark.parametrize("static", [False, True], ids=["dynamic-step", "static-step"])
@torch.no_grad()
def test_decoder_returns_full_forward_logits_while_rows_retire_and_join(config, static):
    policy = random_policy(config, seed=7)
    rng = random.Random(0)
    decoder = BuiltinDecoder(policy.module, StaticDecodeStep(policy.module) if static else None)
    running = []  # token sequences of the running rows, in the decoder's row order
    rows_in_cache = []

    def join(count, longer=False):
        prompts = [[rng.randrange(40) for _ in range(rng.randint(1, 12))] for _ in range(count)]
        if longer:  # longer than every running row: the others get masked slots before their next token
            prompts[0] = [rng.randrange(40) for _ in range(decoder.cache.used + 5)]
        check(policy, decoder.prefill(prompts), prompts)  # the new rows' logits, after each prompt's last token
        running[:] = running + prompts

    join(6)
    for step in range(150):
        if step % 6 == 4:
            join(rng.randint(1, 3), longer=step == 10)
        tokens = [rng.randrange(40) for _ in running]
        for seq, token in zip(running, tokens):
            seq.append(token)
        check(policy, decoder.decode(tokens), running)
        if step % 4 == 2 and len(running) > 1:  # finish the oldest row or any other
            gone = 0 if step % 8 == 2 else rng.randrange(len(running))
            keep = [i for i in range(len(running)) if i != gone]
            decoder.keep(keep)
            running[:] = [running[i] for i in keep]
        rows_in_cache.append(decoder.cache.batch)
    assert any(b < a for a, b in zip(rows_in_cache, rows_in_cache[1:]))  # compacted at least once
    assert decoder.cache.used < 150  # 150 decode steps: slots of retired rows were dropped, not kept forever
    decoder.keep([])
    parked = [entry.tokens for entry in decoder.parked.values()]
    assert all(len(entry.kv.valid) == len(entry.tokens) for entry in decoder.parked.values())  # no masked gaps kept
    assert decoder.cache is None and all(seq in parked for seq in running)  # all parked for their continuations


@CONFIGS
@torch.no_grad()
def test_decoder_returns_continuations_computing_only_their_new_tokens(config):
    policy = random_policy(config, seed=8)
    decoder = BuiltinDecoder(policy.module)
    widths = recording(policy.module)
    first = [[1, 2, 3, 4, 5, 6, 7], [8, 9], [10, 11, 12]]
    decoder.prefill(first)
    fed = [[20, 21, 22], [23, 24, 25], [26, 27, 28]]
    for step in range(3):
        decoder.decode([f[step] for f in fed])
    decoder.keep([1])  # rows 0 and 2 finish; their cached tokens are prompt + fed
    cached = [first[0] + fed[0], first[2] + fed[2]]
    # The third shares 5 tokens with a parked sequence, the last none.
    turn = [cached[1] + [29, 30], cached[0] + [31, 32, 33, 34], cached[0][:5] + [35], [30, 31, 32, 33, 34, 35]]
    widths.clear()
    check(policy, decoder.prefill(turn), turn)
    assert decoder.reused == [len(cached[1]), len(cached[0]), 5, 0]
    # 4 new tokens at most in the others, the whole 6-token last prompt: left-padded to 6.
    assert widths[0] == 6 and decoder.parked == {}  # both continued rows were consumed
    running = [first[1] + fed[1]] + turn
    tokens = [36, 37, 38, 39, 1]
    check(policy, decoder.decode(tokens), [s + [t] for s, t in zip(running, tokens)])


@CONFIGS
@pytest.mark.parametrize("static", [False, True], ids=["dynamic-step", "static-step"])
@torch.no_grad()
def test_decoder_reuses_the_longest_common_prefix_of_a_rewritten_prompt(config, static):
    policy = random_policy(config, seed=11)
    decoder = BuiltinDecoder(policy.module, StaticDecodeStep(policy.module) if static else None)
    rng = random.Random(1)
    first = [[rng.randrange(1, 40) for _ in range(n)] for n in (45, 37, 6)]  # token 0 never: it marks divergence
    decoder.prefill(first)
    fed = [[rng.randrange(1, 40) for _ in range(3)] for _ in first]
    for step in range(3):
        decoder.decode([f[step] for f in fed])
    decoder.keep([2])  # the third keeps running while the rewritten prompts join
    finished = [p + f for p, f in zip(first, fed)]  # parked: 48 and 40 tokens
    rewritten = [
        finished[0][:33] + [0, 3, 4, 5],  # two blocks and one token kept, then a new end
        finished[1][:21] + [0, 0, 7],  # cut within the second block
        finished[0],  # all of it again: all but its last token (whose logits the prefill returns) reused
        [0, 1, 2, 3],  # shares nothing
    ]
    widths = recording(policy.module)
    check(policy, decoder.prefill(rewritten), rewritten)
    assert decoder.reused == [33, 21, 47, 0]
    assert widths[0] == 4  # one forward over the longest part not reused (check() runs the others)
    # Shared only in part, both stay parked for continuations of their own.
    assert sorted(entry.tokens for entry in decoder.parked.values()) == sorted(finished[:2])
    running = [finished[2]] + rewritten
    for _ in range(6):  # decode steps over the rows that started from a cut prefix
        tokens = [rng.randrange(40) for _ in running]
        running = [seq + [t] for seq, t in zip(running, tokens)]
        check(policy, decoder.decode(tokens), running)


@CONFIGS
@pytest.mark.parametrize("static", [False, True], ids=["dynamic-step", "static-step"])
@torch.no_grad()
def test_decoder_computes_a_prefix_its_prompts_share_once_and_takes_it_from_running_rows(config, static):
    policy = random_policy(config, seed=12)
    decoder = BuiltinDecoder(policy.module, StaticDecodeStep(policy.module) if static else None)
    rng = random.Random(2)
    system = [rng.randrange(1, 40) for _ in range(40)]  # what an eval's episodes share: two blocks and more
    prompts = [system + [0, 1, 2], [5, 6], system + [0, 3, 4, 5, 6], system + [0, 7]]
    widths = recording(policy.module)
    logits, prefilled = decoder.prefill(prompts), list(widths)
    check(policy, logits, prompts)
    assert decoder.reused == [0, 0, 41, 41]
    # The first two (nothing earlier to share; unlike lengths, two forwards), then the others' new tokens only.
    assert prefilled == [2, 43, 4]
    running = list(prompts)
    for _ in range(3):
        tokens = [rng.randrange(40) for _ in running]
        running = [seq + [t] for seq, t in zip(running, tokens)]
        check(policy, decoder.decode(tokens), running)
    later = [system + [8, 9], running[1] + [10]]  # a running row's prompt, a running row's whole sequence
    widths.clear()
    logits, prefilled = decoder.prefill(later), list(widths)
    check(policy, logits, later)
    assert decoder.reused == [40, len(running[1])] and prefilled == [2]
    running += later
    tokens = [rng.randrange(40) for _ in running]
    check(policy, decoder.decode(tokens), [seq + [t] for seq, t in zip(running, tokens)])


@torch.no_grad()
def test_engine_reuses_a_finished_turn_for_the_next_until_the_weights_change():
    policy = random_policy({**CONFIG, "eos_token_id": 39}, seed=9)
    engine = Engine()
    engine.set_policy(policy)
    engine.start()
    try:
        widths = recording(policy.module)
        prompt = list(range(1, 31))
        greedy = SamplingParams(max_tokens=6, temperature=0, ignore_eos=True)
        (a,) = engine.generate(prompt, greedy)
        context = prompt + a.token_ids + [5, 6, 7]  # the next turn: completion and a tool result
        widths.clear()
        (b,) = engine.generate(context, greedy)
        assert widths[0] == 4  # the last completion token and the tool result: the rest was cached
        ids = context + b.token_ids
        with torch.no_grad():
            reference = torch.log_softmax(policy.logits(torch.tensor([ids]))[0], -1)
        expected = [reference[len(context) - 1 + i, t].item() for i, t in enumerate(b.token_ids)]
        assert max(abs(x - y) for x, y in zip(b.logprobs, expected)) < 1e-5
        with engine.exclusive():
            pass  # what a train step does: the cached keys belong to the old weights now
        widths.clear()
        context = context + b.token_ids + [8]
        (c,) = engine.generate(context, greedy)
        assert widths[0] == len(context)
        engine.reset_prefix_cache()  # POST /reset_prefix_cache: the same, without a weight change
        widths.clear()
        engine.generate(context + c.token_ids, greedy)
        assert widths[0] == len(context) + len(c.token_ids)
    finally:
        engine.close()


@pytest.mark.parametrize("decode_step", ["dynamic", "static"])
@torch.no_grad()
def test_engine_samples_rewritten_conversations_as_without_the_cache_prefilling_only_past_the_shared_prefix(
    decode_step,
):
    policy = random_policy({**CONFIG, "eos_token_id": 39}, seed=12)
    greedy = SamplingParams(max_tokens=8, temperature=0, ignore_eos=True)
    engines = [Engine(), Engine()]  # one with the first turns cached, one that never saw them
    for engine in engines:
        engine.set_policy(policy, decode_step=decode_step)
        engine.start()
    cached, fresh = engines
    try:
        heads = [list(range(1, 36)), list(range(2, 30)), [3] * 5 + list(range(4, 39))]  # no token 0
        for request in [cached.submit(h, greedy) for h in heads]:  # three conversations' first turns, together
            request.wait()
        shared = [20, 25, 9]
        rewritten = [h[:n] + [0, 38, 37, 36] for h, n in zip(heads, shared)]  # each window kept its head only
        before = cached.stats()
        got = [r.wait()[0] for r in [cached.submit(p, greedy) for p in rewritten]]
        after = cached.stats()
        assert [c.cached_tokens for c in got] == shared
        assert after["reused_tokens"] - before["reused_tokens"] == sum(shared)
        assert after["prefilled_tokens"] - before["prefilled_tokens"] == sum(
            len(p) - n for p, n in zip(rewritten, shared)
        )
        want = [fresh.generate(p, greedy)[0] for p in rewritten]
        assert [c.cached_tokens for c in want] == [0, 0, 0]
        for g, w in zip(got, want):
            assert g.token_ids == w.token_ids
            assert max(abs(x - y) for x, y in zip(g.logprobs, w.logprobs)) < 1e-5
        with cached.exclusive():  # a train step: the parked keys and values belong to the old weights
            for parameter in policy.module.parameters():
                parameter.add_(0.05 * torch.randn_like(parameter))
        (again,) = cached.generate(rewritten[0], greedy)
        assert again.cached_tokens == 0
        ids = rewritten[0] + again.token_ids
        reference = torch.log_softmax(policy.logits(torch.tensor([ids]))[0], -1)
        expected = [reference[len(rewritten[0]) - 1 + i, t].item() for i, t in enumerate(again.token_ids)]
        assert max(abs(x - y) for x, y in zip(again.logprobs, expected)) < 1e-5
    finally:
        for engine in engines:
            engine.close()


@torch.no_grad()
def test_decoder_parks_no_sequence_larger_than_the_whole_budget():
    policy = random_policy(CONFIG, seed=10)
    decoder = BuiltinDecoder(policy.module, prefix_tokens=10)  # room for the short row, not the long one
    decoder.prefill([[1, 2, 3], list(range(1, 30))])
    decoder.keep([1])  # the short row finishes: parked
    decoder.keep([])  # the long one finishes: too big to park, and the short one stays
    assert [entry.tokens for entry in decoder.parked.values()] == [[1, 2, 3]]
    assert decoder.parked_tokens == 3
    # The budget's tokens are the cache's slots: layers x (k, v) x kv heads x head_dim x fp32 each.
    slot = policy.module.config.num_hidden_layers * 2 * 2 * 8 * 4
    assert decoder.slot_bytes == slot
    assert [entry.kv.nbytes for entry in decoder.parked.values()] == [3 * slot]


def test_length_buckets_bound_padding_to_twice_a_rows_length():
    assert length_buckets([16, 120, 17, 30, 16]) == [[0, 4, 2, 3], [1]]
    assert length_buckets([5]) == [[0]]
    assert length_buckets([3, 7, 1]) == [[2, 0, 1]]  # a few tokens apart: one forward
    lengths = [3, 140, 7, 1, 90, 6, 13, 300, 45]
    buckets = length_buckets(lengths)
    assert sorted(i for b in buckets for i in b) == list(range(len(lengths)))
    assert len(buckets) == 4  # 1..13, 45 and 90, 140, 300
    assert all(
        max(lengths[i] for i in b) <= max(2 * min(lengths[i] for i in b), min(lengths[i] for i in b) + 32)
        for b in buckets
    )


@CONFIGS
@torch.no_grad()
def test_prefill_of_unlike_lengths_keeps_the_callers_row_order(config):
    """A long prompt between short ones is prefilled in its own forward; the logits and the rows the
    next decode steps feed stay in the order the prompts were given."""
    policy = random_policy(config, seed=9)
    decoder = BuiltinDecoder(policy.module)
    widths = recording(policy.module)
    prompts = [[1, 2, 3], [5 + i % 30 for i in range(60)], [4, 5, 6, 7], [9, 8]]
    logits = decoder.prefill(prompts)
    assert sorted(widths) == [4, 60]  # not four rows padded to 60
    check(policy, logits, prompts)
    assert decoder.live == [0, 1, 2, 3]  # a new batch's rows in the prompts' order, as one forward leaves them
    running = [list(p) for p in prompts]
    for step in range(3):
        tokens = [10 + step + i for i in range(len(running))]
        for seq, token in zip(running, tokens):
            seq.append(token)
        check(policy, decoder.decode(tokens), running)
