"""The embedded engine's prefix-cache budget (model.engine.prefix_cache_tokens): the tokens of finished
sequences it keeps follow the setting, `auto` computes from free memory as prefix_budget.py says, and a
weight change frees what was kept before the train step runs."""
import gc
import weakref

import pytest
import torch

from atk_trainer.model.modeling import random_policy
from atk_trainer.serve.engine import Engine
from atk_trainer.serve.prefix_budget import default_prefix_cache_tokens, parse_setting
from atk_trainer.serve.sampling_params import SamplingParams
from atk_trainer.serve.server import parse_args
from test_decoders import CONFIG  # the small qwen2 the decoder tests use

GREEDY = SamplingParams(max_tokens=6, temperature=0, ignore_eos=True)
GIB = 1 << 30


def continuation_cached(budget, which):
    """Two 20-token conversations' first turns, A's then B's, under a budget of `budget` tokens, then the
    next turn of `which` one: its cached_tokens. A finished turn parks 25 tokens: its prompt and the
    sampled tokens but the last (whose keys and values were never computed)."""
    engine = Engine(prefix_cache_tokens=budget)
    engine.set_policy(random_policy(CONFIG, seed=3))
    engine.start()
    try:
        prompts = {"a": list(range(1, 21)), "b": list(range(21, 39)) + [1, 2]}
        replies = {name: engine.generate(prompt, GREEDY)[0].token_ids for name, prompt in prompts.items()}
        assert engine.stats()["prefix_cache_tokens"] == budget
        (reply,) = engine.generate(prompts[which] + replies[which] + [7], GREEDY)
        return reply.cached_tokens
    finally:
        engine.close()


@torch.no_grad()
def test_the_cache_keeps_as_many_finished_tokens_as_the_setting_says():
    # 50 tokens: room for both turns, so either continuation reuses all 25 of its tokens.
    assert [continuation_cached(50, which) for which in "ab"] == [25, 25]
    # One fewer: B's turn pushes out A's, the oldest, whose continuation is then prefilled whole.
    assert [continuation_cached(49, which) for which in "ab"] == [0, 25]
    # 0: the prefix cache is off.
    assert continuation_cached(0, "b") == 0


def test_auto_takes_a_quarter_of_the_free_gpu_memory_in_tokens():
    qwen3_4b_bf16 = 36 * 2 * 8 * 128 * 2  # layers x (k, v) x kv heads x head_dim x bytes: 144 KiB a token
    assert default_prefix_cache_tokens(qwen3_4b_bf16, 40 * GIB, cuda=True) == 72817  # 10 GiB
    assert default_prefix_cache_tokens(qwen3_4b_bf16, 0, cuda=True) == 0
    assert default_prefix_cache_tokens(1024, 4 * GIB, cuda=True) == GIB // 1024  # no cap on a GPU


def test_auto_on_cpu_is_16384_tokens_unless_that_is_over_a_tenth_of_the_available_memory():
    tiny = 4 * 2 * 4 * 32 * 4  # models/tiny-arith: 4 KiB a token in fp32; 64 MiB in all
    assert default_prefix_cache_tokens(tiny, 8 * GIB, cuda=False) == 16384
    assert default_prefix_cache_tokens(tiny, None, cuda=False) == 16384  # available memory unknown
    qwen3_06b_fp32 = 28 * 2 * 8 * 128 * 4  # 224 KiB a token: 16384 would be 3.5 GiB
    assert default_prefix_cache_tokens(qwen3_06b_fp32, 8 * GIB, cuda=False) == 3744  # 0.8 GiB


def test_the_setting_parses_auto_or_a_whole_number_and_names_itself_otherwise():
    assert [parse_setting(t) for t in ("auto", "0", "4096")] == [None, 0, 4096]
    for bad in ("-1", "1.5", "many", ""):
        with pytest.raises(ValueError, match="^prefix cache tokens: expected auto or a whole number >= 0, got "):
            parse_setting(bad)
    assert parse_args(["--prefix-cache-tokens", "512"]).prefix_cache_tokens == 512
    assert parse_args([]).prefix_cache_tokens is None  # auto
    with pytest.raises(SystemExit):
        parse_args(["--prefix-cache-tokens", "lots"])


@torch.no_grad()
def test_a_weight_change_frees_the_parked_sequences_before_the_step_runs():
    engine = Engine(prefix_cache_tokens=1000)
    engine.set_policy(random_policy(CONFIG, seed=4))
    engine.start()
    try:
        engine.generate(list(range(1, 21)), GREEDY)
        assert engine.stats()["parked_tokens"] == 25
        decoder = weakref.ref(engine._decoder)
        with engine.exclusive():  # what a train step runs in
            gc.collect()
            assert decoder() is None  # nothing holds its keys and values any more
            assert engine.stats()["parked_tokens"] == 0
    finally:
        engine.close()
