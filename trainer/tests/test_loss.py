"""Each loss function's value and gradient against numbers worked out by hand in the comments."""
import math

import pytest
import torch

from atk_trainer.train.loss import (
    aggregation_weights,
    behaviour_trust_region,
    kl_penalty,
    policy_gradient_loss,
    sft_loss,
    token_entropy,
    token_logprobs,
)

LOG = math.log


def test_token_logprobs_returns_the_next_token_logprob_shifted_by_one():
    # position 0 -> p = (1/4, 3/4); position 1 -> p = (2/3, 1/3); the last position predicts nothing.
    logits = torch.tensor([[[0.0, LOG(3)], [LOG(2), 0.0], [5.0, -5.0]]], requires_grad=True)  # (1, 3, 2)
    ids = torch.tensor([[1, 1, 0]])
    logp = token_logprobs(logits, ids)
    assert torch.allclose(logp, torch.tensor([[0.0, LOG(0.75), LOG(2 / 3)]]))
    logp[0, 1].backward()
    # d log softmax(z)[1] / dz = onehot(1) - p
    assert torch.allclose(logits.grad[0, 0], torch.tensor([-0.25, 0.25]))
    assert torch.count_nonzero(logits.grad[0, 1:]) == 0


def test_token_entropy_returns_the_predicting_distributions_entropy():
    logits = torch.tensor([[[0.0, LOG(3)], [0.0, 0.0], [1.0, 2.0]]])
    expected = [0.0, -(0.25 * LOG(0.25) + 0.75 * LOG(0.75)), LOG(2)]
    assert torch.allclose(token_entropy(logits), torch.tensor([expected]))


def test_token_entropy_normalises_over_the_vocabulary_not_the_positions():
    # Three tokens in the vocabulary, two predicting positions: a softmax over the wrong axis differs.
    logits = torch.tensor([[[0.0, 0.0, LOG(2)], [LOG(3), 0.0, 0.0], [9.0, 9.0, 9.0]]])
    first = -(2 * 0.25 * LOG(0.25) + 0.5 * LOG(0.5))
    second = -(0.6 * LOG(0.6) + 2 * 0.2 * LOG(0.2))
    assert torch.allclose(token_entropy(logits), torch.tensor([[0.0, first, second]]))


def test_policy_gradient_loss_returns_clipped_surrogate_and_its_gradient():
    # token 1: r = 0.5/0.4 = 1.25, A = +1 -> clipped at 1 + 0.2: loss -1.2, no gradient.
    # token 2: r = 0.2/0.25 = 0.8, A = -1, inside [1 - 0.25, 1.2]: loss 0.8, d/dlogp = -A r = 0.8.
    logp = torch.tensor([[0.0, LOG(0.5), LOG(0.2)]], requires_grad=True)
    old = torch.tensor([[0.0, LOG(0.4), LOG(0.25)]])
    adv = torch.tensor([[0.0, 1.0, -1.0]])
    loss, clipped = policy_gradient_loss(logp, old, adv, clip_low=0.25, clip_high=0.2)
    assert torch.allclose(loss, torch.tensor([[0.0, -1.2, 0.8]]))
    assert clipped.tolist() == [[False, True, False]]
    loss.sum().backward()
    assert torch.allclose(logp.grad, torch.tensor([[0.0, 0.0, 0.8]]))


def test_policy_gradient_loss_clips_low_side_for_negative_advantages():
    # r = 0.5, A = -2: unclipped -1.0, clipped 0.8 * -2 = -1.6 -> min is -1.6 (clipped), no gradient.
    logp = torch.tensor([[LOG(0.5)]], requires_grad=True)
    loss, clipped = policy_gradient_loss(logp, torch.zeros(1, 1), torch.tensor([[-2.0]]), 0.2, 0.28)
    assert torch.allclose(loss, torch.tensor([[1.6]]))
    assert clipped.tolist() == [[True]]
    loss.sum().backward()
    assert logp.grad.item() == 0.0


def test_behaviour_trust_region_returns_the_ppo_clip_condition_against_the_sampling_policy():
    # ratio trainer / behaviour: 1.5 and 1.1 (A > 0), 0.5 and 0.9 (A < 0); clip range [0.8, 1.28].
    logp = torch.tensor([[LOG(0.6), LOG(0.44), LOG(0.2), LOG(0.36)]])
    behaviour = torch.tensor([[LOG(0.4), LOG(0.4), LOG(0.4), LOG(0.4)]])
    advantages = torch.tensor([[1.0, 1.0, -1.0, -1.0]])
    outside = behaviour_trust_region(logp, behaviour, advantages, clip_low=0.2, clip_high=0.28)
    assert outside.tolist() == [[True, False, True, False]]
    # A raised token with a negative advantage (or a lowered one with a positive) is PPO's unclipped side.
    assert not behaviour_trust_region(logp, behaviour, -advantages, 0.2, 0.28).any()
    # The side is the advantage's sign, whatever its size: a small positive one on a lowered token stays in.
    assert not behaviour_trust_region(logp, behaviour, torch.tensor([[0.0, 0.0, 0.5, 0.5]]), 0.2, 0.28).any()
    # A zero advantage is on neither side; a ratio exactly at the bound (here exp(0) = 1) is still inside.
    assert not behaviour_trust_region(logp, behaviour, torch.zeros(1, 4), 0.2, 0.28).any()
    same = torch.tensor([[LOG(0.4), LOG(0.4)]])
    assert not behaviour_trust_region(same, same, torch.tensor([[1.0, -1.0]]), clip_low=0.0, clip_high=0.0).any()


def test_kl_penalty_returns_k1_and_k3_with_their_gradients():
    # policy p = 0.5, reference q = 0.25: k1 = log(p/q) = log 2; k3 = q/p - log(q/p) - 1 = 0.5 + log 2 - 1.
    for estimator, value, grad in (("k1", LOG(2), 1.0), ("k3", 0.5 + LOG(2) - 1, 1 - 0.5)):
        logp = torch.tensor([[LOG(0.5)]], requires_grad=True)
        kl = kl_penalty(logp, torch.tensor([[LOG(0.25)]]), estimator)
        kl.sum().backward()
        assert kl.item() == pytest.approx(value, rel=1e-6)
        assert logp.grad.item() == pytest.approx(grad, rel=1e-6)  # d k3/d logp = 1 - q/p


def test_sft_loss_returns_negative_logprob():
    logp = torch.tensor([[0.0, LOG(0.25)]], requires_grad=True)
    loss = sft_loss(logp)
    (loss * torch.tensor([[0.0, 1.0]])).sum().backward()
    assert torch.allclose(loss, torch.tensor([[0.0, LOG(4)]]))
    assert logp.grad.tolist() == [[0.0, -1.0]]


MASK = torch.tensor([[0.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 0.0]])
PER_TOKEN = torch.tensor([[9.0, 1.0, 2.0, 3.0], [9.0, 4.0, 9.0, 9.0]])  # the 9s are masked out


@pytest.mark.parametrize(
    "mode, value, weights",
    [
        ("token-mean", (1 + 2 + 3 + 4) / 4, [[0, 1 / 4, 1 / 4, 1 / 4], [0, 1 / 4, 0, 0]]),
        ("seq-mean-token-sum", (6 + 4) / 2, [[0, 1 / 2, 1 / 2, 1 / 2], [0, 1 / 2, 0, 0]]),
        ("seq-mean-token-mean", (6 / 3 + 4 / 1) / 2, [[0, 1 / 6, 1 / 6, 1 / 6], [0, 1 / 2, 0, 0]]),
        ("seq-mean-token-sum-norm", (6 / 4 + 4 / 4) / 2, [[0, 1 / 8, 1 / 8, 1 / 8], [0, 1 / 8, 0, 0]]),
    ],
)
def test_aggregation_weights_returns_each_modes_value_and_gradient(mode, value, weights):
    per_token = PER_TOKEN.clone().requires_grad_(True)
    w = aggregation_weights(MASK, mode, total_tokens=4, total_sequences=2, norm_constant=4)
    loss = (per_token * w).sum()
    loss.backward()
    assert loss.item() == pytest.approx(value)
    assert torch.allclose(per_token.grad, torch.tensor(weights))


def test_aggregation_weights_rejects_unknown_mode():
    with pytest.raises(ValueError, match="unknown loss aggregation"):
        aggregation_weights(MASK, "sum", 4, 2)
