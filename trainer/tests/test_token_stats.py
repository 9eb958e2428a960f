"""Chunked logprobs and entropy from hidden states (model/token_stats.py) against the full-logits path
(train/loss.py on policy.logits): same values and gradients, and no (tokens x vocabulary) tensor kept."""
import torch

from atk_trainer.model.modeling import random_policy
from atk_trainer.model.token_stats import token_stats
from atk_trainer.train.loss import token_entropy, token_logprobs
from tiny import TINY_CONFIG, tiny_policy

IDS = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8], [9, 10, 11, 12, 13, 0, 0, 0], [31, 30, 29, 28, 27, 26, 25, 24]])


def full_path(policy, ids, weights):
    logits = policy.logits(ids)
    logp = token_logprobs(logits, ids)
    return logp, token_entropy(logits), (logp * weights).sum()


def chunked_path(policy, ids, weights, chunk):
    logp, entropy, _ = policy.token_stats(ids, chunk=chunk)
    return logp, entropy, (logp * weights).sum()


def grads(policy, loss):
    policy.module.zero_grad(set_to_none=True)
    loss.backward()
    return {n: p.grad.clone() for n, p in policy.module.named_parameters()}


def test_token_stats_returns_the_full_logits_values_and_gradients_in_chunks():
    policy = tiny_policy(seed=1)
    weights = torch.randn(IDS.shape, generator=torch.Generator().manual_seed(0))
    logp, entropy, loss = full_path(policy, IDS, weights)
    expected = grads(policy, loss)
    for chunk in (1, 5, 64, None):  # 21 positions: many chunks, uneven chunks, one chunk
        c_logp, c_entropy, c_loss = chunked_path(policy, IDS, weights, chunk)
        assert c_logp.dtype == torch.float32 and c_logp.shape == IDS.shape
        assert torch.allclose(c_logp, logp, atol=1e-6, rtol=0) and torch.allclose(c_entropy, entropy, atol=1e-6, rtol=0)
        assert not c_entropy.requires_grad
        got = grads(policy, c_loss)
        assert got.keys() == expected.keys()
        for name in expected:
            # 1e-6 relative as well: a tied embedding's gradient sums every chunk's lm_head product (values
            # up to ~4, where a float32 ulp is 5e-7), and torch 2.x orders those sums differently from 1.13.
            torch.testing.assert_close(
                got[name], expected[name], atol=1e-6, rtol=1e-6, msg=lambda m, n=name: f"{n}: {m}"
            )


def test_token_stats_keeps_no_tokens_by_vocabulary_tensor_for_backward():
    config = dict(TINY_CONFIG, vocab_size=512, tie_word_embeddings=False)
    policy = random_policy(config, seed=0)
    ids = torch.randint(0, 512, (4, 33), generator=torch.Generator().manual_seed(1))
    full = ids.shape[0] * (ids.shape[1] - 1) * 512  # a float32 (N x V) logits tensor

    def largest_saved(run):
        sizes = [0]
        with torch.autograd.graph.saved_tensors_hooks(lambda t: sizes.append(t.numel()) or t, lambda t: t):
            out = run()
        return max(sizes), out

    big, logp = largest_saved(lambda: token_logprobs(policy.logits(ids), ids))
    assert big >= full  # the full path saves the logits: the probe sees them
    big, (chunked, _, _) = largest_saved(lambda: policy.token_stats(ids, chunk=16))
    assert big < full // 4
    assert torch.allclose(chunked, logp, atol=1e-6, rtol=0)
    chunked.sum().backward()  # the chunks are recomputed in backward
    assert policy.module.lm_head.weight.grad is not None


def test_token_stats_without_grad_saves_nothing_and_matches():
    policy = tiny_policy(seed=2)
    hidden = policy.module.model(IDS)
    with torch.no_grad():
        logp, entropy, _ = token_stats(hidden, policy.module.lm_head, IDS, chunk=4)
        logits = policy.logits(IDS)
    assert torch.allclose(logp, token_logprobs(logits, IDS), atol=1e-6, rtol=0)
    assert torch.allclose(entropy, token_entropy(logits), atol=1e-6, rtol=0)
    assert logp[:, 0].abs().sum() == 0
