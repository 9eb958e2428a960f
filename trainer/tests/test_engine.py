"""The engine's sampler: KV-cache decoding equals full forward passes, requests join running batches,
seeds are per request, and weight changes wait for running generations."""
import contextlib
import time

import pytest
import torch

from atk_trainer.serve.engine import Engine
from atk_trainer.serve.sampling_params import SamplingParams
from atk_trainer.model.modeling import random_policy

CONFIG = {
    "model_type": "qwen2",
    "vocab_size": 48,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 128,
    "tie_word_embeddings": True,
    "eos_token_id": 47,
}


@contextlib.contextmanager
def serving(seed):
    """A running engine over a fresh random policy; closed afterwards."""
    policy = random_policy(CONFIG, seed=seed)
    e = Engine()
    e.set_policy(policy)
    e.start()
    try:
        yield policy, e
    finally:
        e.close()


@torch.no_grad()
def greedy_by_full_forward(policy, prompt, steps, stop=()):
    ids = list(prompt)
    for _ in range(steps):
        ids.append(int(policy.logits(torch.tensor([ids]))[0, -1].argmax()))
        if ids[-1] in stop:
            break
    return ids[len(prompt) :]


def test_generate_returns_greedy_decoding_by_full_forward_passes_while_requests_join():
    with serving(1) as (policy, e):
        prompts = [[1, 2, 3], [5, 6, 7, 8, 9, 10, 11], [4], [9, 9, 9, 9], [30, 31]]
        requests = []
        for i, prompt in enumerate(prompts):  # staggered: later prompts join a batch that is decoding
            requests.append(e.submit(prompt, SamplingParams(max_tokens=14 + i, temperature=0, ignore_eos=True)))
            time.sleep(0.003)
        for i, (prompt, request) in enumerate(zip(prompts, requests)):
            (c,) = request.wait(30)
            assert c.token_ids == greedy_by_full_forward(policy, prompt, 14 + i)
            assert (c.finish_reason, c.stop_reason) == ("length", None)


def test_generate_returns_stop_reasons_for_stop_tokens_and_eos():
    with serving(2) as (policy, e):
        free = greedy_by_full_forward(policy, [1, 2], 20)
        stop = free[3]
        (c,) = e.generate([1, 2], SamplingParams(max_tokens=20, temperature=0, stop_token_ids=[stop], ignore_eos=True))
        assert c.token_ids == free[: free.index(stop) + 1] and (c.finish_reason, c.stop_reason) == ("stop", stop)
        e.eos_token_ids = [stop]  # the model's eos stops too, with stop_reason None, unless ignore_eos
        (c,) = e.generate([1, 2], SamplingParams(max_tokens=20, temperature=0))
        assert c.token_ids[-1] == stop and (c.finish_reason, c.stop_reason) == ("stop", None)


def test_generate_returns_the_same_tokens_for_a_seed_whatever_else_runs():
    with serving(3) as (policy, e):
        params = SamplingParams(max_tokens=12, seed=1234, n=2, ignore_eos=True)
        alone = [c.token_ids for c in e.generate([7, 8], params)]
        noise = [e.submit([i + 1] * (i % 4 + 1), SamplingParams(max_tokens=10, ignore_eos=True)) for i in range(8)]
        crowded = [c.token_ids for c in e.generate([7, 8], params)]
        [r.wait(30) for r in noise]
        assert crowded == alone
        assert alone[0] != alone[1]  # choice i samples with seed + i
        (single,) = e.generate([7, 8], SamplingParams(max_tokens=12, seed=1235, ignore_eos=True))
        assert single.token_ids == alone[1]


def test_exclusive_waits_for_running_generations_and_holds_back_new_ones():
    with serving(4) as (policy, e):
        first = e.submit([1], SamplingParams(max_tokens=60, ignore_eos=True))
        time.sleep(0.01)
        events = []
        with e.exclusive():
            assert first.wait(0) and e.stats()["running"] == 0  # finished before exclusive() returned
            late = e.submit([2], SamplingParams(max_tokens=3, ignore_eos=True))
            time.sleep(0.05)
            stats = e.stats()
            events.append({"running": stats["running"], "waiting": stats["waiting"]})
            e.policy_version = 7
        (c,) = late.wait(30)
        assert events == [{"running": 0, "waiting": 1}]
        assert (first.wait()[0].policy_version, c.policy_version) == (0, 7)


def test_close_when_idle_lets_submitted_requests_finish_then_closes():
    with serving(5) as (_policy, e):
        requests = [e.submit([1 + i], SamplingParams(max_tokens=100, ignore_eos=True)) for i in range(8)]
        e.close_when_idle()  # as an adapter replaced or unloaded while its requests run
        assert [len(r.wait(60)[0].token_ids) for r in requests] == [100] * 8
        for _ in range(100):
            if e._closed:
                break
            time.sleep(0.01)
        with pytest.raises(RuntimeError, match="shut down"):
            e.submit([1], SamplingParams(max_tokens=1))


def test_generate_returns_logprobs_of_the_newest_weights():
    with serving(5) as (policy, e):
        params = SamplingParams(max_tokens=5, temperature=0, ignore_eos=True)
        before = e.generate([3, 4], params)[0]
        with e.exclusive(), torch.no_grad():
            policy.module.lm_head.weight.mul_(3.0)  # what a train step does: the same module, new values
        after = e.generate([3, 4], params)[0]
        with torch.no_grad():
            ids = torch.tensor([[3, 4] + after.token_ids])
            ref = torch.log_softmax(policy.logits(ids)[0, 1:-1], -1).gather(-1, ids[0, 2:, None]).squeeze(-1)
        assert max(abs(a - b) for a, b in zip(after.logprobs, ref.tolist())) < 1e-5
        assert after.logprobs != before.logprobs


def test_generate_fails_the_request_not_the_engine_when_a_batch_raises():
    with serving(6) as (policy, e):
        bad = e.submit([CONFIG["vocab_size"] + 5], SamplingParams(max_tokens=2))  # out of range: index error
        try:
            bad.wait(30)
            raise AssertionError("expected the request to fail")
        except (IndexError, RuntimeError):
            pass
        assert len(e.generate([1], SamplingParams(max_tokens=2))[0].token_ids) == 2
