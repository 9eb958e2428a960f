"""processed_logprobs: the distribution actually sampled from, after temperature, top-k and top-p."""
import math

import torch

from atk_trainer.serve.sampling import processed_logprobs, sample

LOGITS = torch.tensor([[2.0, 1.0, 0.0, -1.0, 0.5]])


def processed(temperature=1.0, top_k=-1, top_p=1.0, logits=LOGITS):
    return processed_logprobs(logits, torch.tensor([temperature]), torch.tensor([top_k]), torch.tensor([top_p]))[0]


def log_softmax_over(values, keep):
    z = math.log(sum(math.exp(values[i]) for i in keep))
    return [values[i] - z if i in keep else -math.inf for i in range(len(values))]


def assert_close(got, want):
    for g, w in zip(got.tolist(), want):
        assert (g == w == -math.inf) or abs(g - w) < 1e-6, (got, want)


def test_processed_logprobs_returns_the_tempered_distribution():
    assert_close(processed(temperature=0.5), log_softmax_over([4.0, 2.0, 0.0, -2.0, 1.0], {0, 1, 2, 3, 4}))
    assert_close(processed(temperature=0.0), log_softmax_over(LOGITS[0].tolist(), {0, 1, 2, 3, 4}))  # greedy: as T=1


def test_processed_logprobs_returns_top_k_renormalised():
    assert_close(processed(top_k=2), log_softmax_over(LOGITS[0].tolist(), {0, 1}))
    assert_close(processed(top_k=2, temperature=2.0), log_softmax_over([1.0, 0.5, 0.0, -0.5, 0.25], {0, 1}))
    assert_close(processed(top_k=0), log_softmax_over(LOGITS[0].tolist(), {0, 1, 2, 3, 4}))  # 0 = off
    tied = torch.tensor([[1.0, 3.0, 1.0, 0.0]])
    assert_close(processed(top_k=2, logits=tied), log_softmax_over([1.0, 3.0, 1.0, 0.0], {0, 1, 2}))  # ties at k kept


def test_processed_logprobs_returns_the_smallest_top_p_set():
    p = torch.softmax(LOGITS[0], 0).tolist()  # by size: 0 (.563), 1 (.207), 4 (.126), 2 (.076), 3 (.028)
    assert p[0] < 0.7 < p[0] + p[1] < 0.8 < p[0] + p[1] + p[4]
    assert_close(processed(top_p=0.7), log_softmax_over(LOGITS[0].tolist(), {0, 1}))
    assert_close(processed(top_p=0.8), log_softmax_over(LOGITS[0].tolist(), {0, 1, 4}))
    assert_close(processed(top_p=0.5), log_softmax_over(LOGITS[0].tolist(), {0}))  # the top token always stays
    # top-k first, then top-p over the renormalised survivors: {0, 1} has .73/.27, so p=.75 keeps both.
    assert_close(processed(top_p=0.75, top_k=2), log_softmax_over(LOGITS[0].tolist(), {0, 1}))


def test_processed_logprobs_returns_each_rows_own_settings():
    logits = LOGITS.repeat(3, 1)
    got = processed_logprobs(logits, torch.tensor([1.0, 0.5, 1.0]), torch.tensor([-1, -1, 2]), torch.tensor([1.0, 1.0, 1.0]))
    assert_close(got[0], log_softmax_over(LOGITS[0].tolist(), {0, 1, 2, 3, 4}))
    assert_close(got[1], log_softmax_over([4.0, 2.0, 0.0, -2.0, 1.0], {0, 1, 2, 3, 4}))
    assert_close(got[2], log_softmax_over(LOGITS[0].tolist(), {0, 1}))


def test_sample_returns_frequencies_of_the_processed_distribution_and_greedy_argmax():
    logp = processed(top_k=3).unsqueeze(0).repeat(20000, 1)
    shared = torch.Generator().manual_seed(0)
    tokens = sample(logp, torch.zeros(20000, dtype=torch.bool), [None] * 20000, shared)
    freq = torch.bincount(tokens, minlength=5).float() / 20000
    assert torch.allclose(freq, logp[0].exp(), atol=0.015)
    assert freq[2] == 0 and freq[3] == 0  # outside the top 3
    assert sample(logp[:2], torch.ones(2, dtype=torch.bool), [None, None], shared).tolist() == [0, 0]


def test_sample_returns_the_same_token_for_the_same_seed_whatever_the_batch():
    logp = torch.log_softmax(torch.randn(6, 50), -1)
    picks = []
    for others in (0, 5):
        rows = [None] * others + [torch.Generator().manual_seed(42)]
        picks.append([sample(logp[-1 - others:], torch.zeros(others + 1, dtype=torch.bool), rows, torch.Generator())[-1].item()])
    assert picks[0] == picks[1]
