"""processed_logprobs: the distribution actually sampled from, after temperature, top-k and top-p."""
import math

import torch

from atk_trainer.serve.sampling import exponential_noise, processed_logprobs, sample

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
    got = processed_logprobs(
        logits, torch.tensor([1.0, 0.5, 1.0]), torch.tensor([-1, -1, 2]), torch.tensor([1.0, 1.0, 1.0])
    )
    assert_close(got[0], log_softmax_over(LOGITS[0].tolist(), {0, 1, 2, 3, 4}))
    assert_close(got[1], log_softmax_over([4.0, 2.0, 0.0, -2.0, 1.0], {0, 1, 2, 3, 4}))
    assert_close(got[2], log_softmax_over(LOGITS[0].tolist(), {0, 1}))


def test_processed_logprobs_returns_each_rows_own_top_p_and_the_same_with_the_host_flag():
    logits = torch.randn(4, 40, generator=torch.Generator().manual_seed(0))
    settings = (torch.tensor([1.0, 0.7, 0.0, 1.3]), torch.tensor([-1, 5, -1, 0]), torch.tensor([1.0, 1.0, 0.6, 0.9]))
    batched = processed_logprobs(logits, *settings)
    assert torch.equal(processed_logprobs(logits, *settings, truncate=True), batched)
    for i in range(4):  # each row alone: what a batch of one would get
        alone = processed_logprobs(logits[i : i + 1], *(t[i : i + 1] for t in settings))[0]
        assert torch.allclose(batched[i], alone, atol=1e-6) and torch.equal(batched[i].isinf(), alone.isinf())
    assert not batched[0].isinf().any()  # no top-k, no top-p: the whole vocabulary, whatever the other rows use


def draw(logp, seeds, steps=None):
    B = logp.shape[0]
    steps = torch.zeros(B, dtype=torch.long) if steps is None else steps
    return sample(logp, torch.zeros(B, dtype=torch.bool), torch.tensor(seeds, dtype=torch.long), steps)


def test_sample_returns_frequencies_of_the_processed_distribution_and_greedy_argmax():
    logp = processed(top_k=3).unsqueeze(0).repeat(20000, 1)
    tokens = draw(logp, list(range(20000)))  # 20000 sequences' first draws
    freq = torch.bincount(tokens, minlength=5).float() / 20000
    assert torch.allclose(freq, logp[0].exp(), atol=0.015)
    assert freq[2] == 0 and freq[3] == 0  # outside the top 3
    one = logp[:1].repeat(4000, 1)  # one sequence's successive draws are as random as many sequences' first
    steps = torch.bincount(draw(one, [7] * 4000, torch.arange(4000)), minlength=5).float() / 4000
    assert torch.allclose(steps, logp[0].exp(), atol=0.03)
    assert sample(
        logp[:2], torch.ones(2, dtype=torch.bool), torch.tensor([1, 2]), torch.zeros(2, dtype=torch.long)
    ).tolist() == [0, 0]


def test_sample_returns_the_same_token_for_the_same_seed_and_step_whatever_the_batch():
    logp = torch.log_softmax(torch.randn(6, 50), -1)
    alone = draw(logp[-1:], [42], torch.tensor([3]))
    crowded = draw(logp, [1, 2, 3, 4, 5, 42], torch.tensor([0, 9, 3, 3, 1, 3]))
    assert alone.item() == crowded[-1].item()
    many = draw(logp[-1:].repeat(64, 1), [42] * 32 + [43] * 32, torch.arange(64) % 32)
    assert not torch.equal(many[:32], many[32:])  # another seed, other draws
    assert len(set(many[:32].tolist())) > 1  # successive steps of one seed differ


def test_exponential_noise_is_exp1_and_depends_only_on_seed_step_and_token():
    q = exponential_noise(torch.tensor([1, 2**62, -5]), torch.tensor([0, 7, 100]), 200000)
    assert q.min() > 0 and torch.isfinite(q).all()
    assert torch.allclose(q.mean(-1), torch.ones(3), atol=0.01) and torch.allclose(q.var(-1), torch.ones(3), atol=0.03)
    assert torch.equal(exponential_noise(torch.tensor([2**62]), torch.tensor([7]), 300)[0], q[1, :300])
