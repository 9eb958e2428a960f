"""Dual-clip PPO, REINFORCE, the k2 KL estimator, token-sum aggregation, IcePop's masked importance weights, the
geometric-mean sequence ratio and rejected tokens leaving the aggregation's counts: each against a reference
written here in float64 from its paper's equation (per-token loops), values and gradients, with edge cases."""
import math

import pytest
import torch

from atk_trainer.train.loss import (
    aggregation_weights,
    drop_from_count,
    kl_penalty,
    mismatch_weights,
    policy_gradient_loss,
    reinforce_loss,
    sequence_ids,
)

D = torch.float64


def leaf(values):
    return torch.tensor(values, dtype=D, requires_grad=True)


def value_and_grad(fn, logp):
    """fn(logp) summed, and its gradient with respect to logp."""
    logp = logp.detach().clone().requires_grad_(True)
    total = fn(logp).sum()
    total.backward()
    return float(total), logp.grad.tolist()


# -- dual-clip PPO -----------------------------------------------------------------------------------------------


def reference_dual_clip(logp, old, advantages, low, high, c):
    """Ye et al. 2020 (arXiv 1912.09729) eq. 5 as a loss, per token, with its derivative in log pi:
    A >= 0: -min(r A, clip(r) A); A < 0: -max(min(r A, clip(r) A), c A). A branch that is a constant in r
    (the clipped ratio or c A) has derivative 0, the r A branch -r A."""
    values, grads = [], []
    for lp, o, a in zip(logp, old, advantages):
        r = math.exp(lp - o)
        plain, clipped = r * a, min(max(r, 1 - low), 1 + high) * a
        objective, d = (plain, r * a) if plain <= clipped else (clipped, 0.0)
        if a < 0 and c * a > objective:
            objective, d = c * a, 0.0
        values.append(-objective)
        grads.append(-d)
    return values, grads


@pytest.mark.parametrize("c", [None, 3.0, 1.5])
def test_policy_gradient_loss_with_dual_clip_matches_the_papers_loss_and_gradient(c):
    # ratios 5 and 2 with A < 0: past c = 3 only the first (dual clip), past c = 1.5 both; ratio 4 with A > 0
    # (clipped from above, dual clip never applies); ratio 0.5 with A < 0 (clipped from below); ratio 1.1 with
    # A < 0 (inside); A = 0 (no loss).
    old = [-1.0, -2.0, -0.5, -1.5, -0.7, -0.9]
    ratios = [5.0, 2.0, 4.0, 0.5, 1.1, 3.0]
    advantages = [-1.0, -2.0, 1.5, -0.5, -1.0, 0.0]
    logp = [o + math.log(r) for o, r in zip(old, ratios)]
    t_old, t_adv = torch.tensor([old], dtype=D), torch.tensor([advantages], dtype=D)
    value, grad = value_and_grad(
        lambda lp: policy_gradient_loss(lp, t_old, t_adv, 0.2, 0.28, dual_clip=c)[0], torch.tensor([logp], dtype=D)
    )
    if c is None:  # plain PPO: the dual branch never applies
        want, want_grad = reference_dual_clip(logp, old, advantages, 0.2, 0.28, math.inf)
    else:
        want, want_grad = reference_dual_clip(logp, old, advantages, 0.2, 0.28, c)
    assert value == pytest.approx(sum(want), rel=1e-12)
    assert grad[0] == pytest.approx(want_grad, rel=1e-12, abs=1e-15)
    _, no_gradient = policy_gradient_loss(torch.tensor([logp], dtype=D), t_old, t_adv, 0.2, 0.28, dual_clip=c)
    dual = {None: [False, False], 3.0: [True, False], 1.5: [True, True]}[c]
    assert no_gradient[0].tolist() == dual + [True, True, False, False]
    if c == 3.0:  # the loss of the ratio-5 token stops at -c A = 3 where plain PPO's is 5
        assert want[0] == pytest.approx(3.0)


# -- REINFORCE ---------------------------------------------------------------------------------------------------


def test_reinforce_loss_is_minus_the_advantage_times_the_log_likelihood_with_its_gradient():
    # Williams 1992: value -A log pi (the logged loss), gradient -A grad log pi; no ratio, no clip.
    logp = [math.log(0.5), math.log(0.01), math.log(0.9), -3.0]
    advantages = [1.0, -2.0, 0.0, 0.5]
    t_adv = torch.tensor([advantages], dtype=D)
    value, grad = value_and_grad(lambda lp: reinforce_loss(lp, t_adv)[0], torch.tensor([logp], dtype=D))
    assert value == pytest.approx(sum(-a * lp for a, lp in zip(advantages, logp)), rel=1e-12)
    assert grad[0] == pytest.approx([-a for a in advantages], rel=1e-12)
    assert not reinforce_loss(torch.tensor([logp], dtype=D), t_adv)[1].any()


# -- KL estimators -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("estimator", ["k1", "k2", "k3"])
def test_kl_penalty_matches_schulmans_estimators_and_their_gradients(estimator):
    # Schulman 2020, "Approximating KL divergence", with r = pi_ref / pi (samples from pi):
    # k1 = -log r, k2 = (log r)^2 / 2, k3 = (r - 1) - log r; derivatives in log pi: 1, log pi - log pi_ref, 1 - r.
    logp = [-1.0, -0.2, -3.0, -0.5]
    ref = [-1.5, -0.2, -0.1, -2.0]
    forms = {
        "k1": (lambda lp, rf: lp - rf, lambda lp, rf: 1.0),
        "k2": (lambda lp, rf: 0.5 * (rf - lp) ** 2, lambda lp, rf: lp - rf),
        "k3": (lambda lp, rf: math.exp(rf - lp) - 1 - (rf - lp), lambda lp, rf: 1 - math.exp(rf - lp)),
    }[estimator]
    t_ref = torch.tensor([ref], dtype=D)
    value, grad = value_and_grad(lambda lp: kl_penalty(lp, t_ref, estimator), torch.tensor([logp], dtype=D))
    assert value == pytest.approx(sum(forms[0](lp, rf) for lp, rf in zip(logp, ref)), rel=1e-12)
    assert grad[0] == pytest.approx([forms[1](lp, rf) for lp, rf in zip(logp, ref)], rel=1e-12, abs=1e-15)
    if estimator == "k2":  # zero where the policies agree, positive elsewhere
        per_token = kl_penalty(torch.tensor([logp], dtype=D), t_ref, estimator)[0].tolist()
        assert per_token[1] == 0.0 and min(per_token[:1] + per_token[2:]) > 0


# -- aggregation -------------------------------------------------------------------------------------------------


def test_token_sum_aggregation_is_the_plain_sum_of_every_trained_tokens_loss():
    mask = torch.tensor([[0, 1, 1, 0], [0, 1, 1, 1]], dtype=D)
    per_token = torch.tensor([[9.0, 0.5, -1.0, 9.0], [9.0, 2.0, 3.0, -0.25]], dtype=D)
    weights = aggregation_weights(mask, "token-sum", total_tokens=5, total_sequences=2)
    assert float((per_token * weights).sum()) == pytest.approx(0.5 - 1.0 + 2.0 + 3.0 - 0.25)


# -- IcePop, MIS and rejection -----------------------------------------------------------------------------------


def reference_icepop_objective(logp, old, train_old, engine, mask, advantages, low, high, eps_low, eps_high):
    """-J_IcePop (Ling team 2025, "Small leak can sink a great ship"), per sequence:
    -(1/G) sum_i (1/|y_i|) sum_t M(k_t) min(r_t A_i, clip(r_t, 1 - eps_low, 1 + eps_high) A_i),
    k_t = pi_train(theta_old) / pi_infer(theta_old), M(k) = k inside [low, high] and 0 outside, |y_i| counting
    every trained token of y_i, masked or not."""
    total = torch.zeros((), dtype=D)
    rows = len(mask)
    for i in range(rows):
        trained = [t for t in range(len(mask[i])) if mask[i][t]]
        inner = torch.zeros((), dtype=D)
        for t in trained:
            k = math.exp(train_old[i][t] - engine[i][t])
            m = k if low <= k <= high else 0.0
            r = torch.exp(logp[i, t] - old[i][t])
            a = advantages[i]
            inner = inner + m * torch.minimum(r * a, torch.clamp(r, 1 - eps_low, 1 + eps_high) * a)
        total = total - inner / len(trained) / rows
    return total


def icepop_case():
    """Two sequences; trainer/engine log ratios put tokens inside [0.5, 2] (weights e^0.3, e^-0.2, 1), above
    (e^1) and below (e^-1); the policy has moved from pi_old so some PPO ratios clip."""
    engine = [[0.0, -1.0, -2.0, -0.5, 0.0], [0.0, -0.3, -1.2, -0.8, -0.4]]
    gap = [[0.0, 0.3, 1.0, -0.2, 0.0], [0.0, -1.0, 0.0, 0.3, 0.1]]
    train_old = [[e + g for e, g in zip(er, gr)] for er, gr in zip(engine, gap)]
    move = [[0.0, 0.1, -0.4, 0.35, 0.0], [0.0, 0.2, -0.05, -0.3, 0.02]]
    logp = [[o + d for o, d in zip(orow, drow)] for orow, drow in zip(train_old, move)]
    mask = [[0, 1, 1, 1, 0], [0, 1, 1, 1, 1]]
    return engine, train_old, logp, mask, [1.5, -0.75]


def test_mask_mode_with_ppo_and_seq_mean_token_mean_is_icepops_objective_in_value_and_gradient():
    engine, train_old, logp, mask, advantages = icepop_case()
    t_mask = torch.tensor(mask, dtype=D)
    ids = sequence_ids((2, 5), None, t_mask.device)
    t_adv = torch.tensor(advantages, dtype=D)[:, None].expand(2, 5)
    weights, outside = mismatch_weights(
        torch.tensor(train_old, dtype=D), torch.tensor(engine, dtype=D), t_mask, ids, "mask", "token", 0.5, 2.0
    )
    agg = t_mask / (t_mask.sum(-1, keepdim=True) * 2)  # seq-mean-token-mean over the whole count

    def ours(lp):
        return policy_gradient_loss(lp, torch.tensor(train_old, dtype=D), t_adv, 0.2, 0.2)[0] * weights * agg

    value, grad = value_and_grad(ours, torch.tensor(logp, dtype=D))
    ref_logp = torch.tensor(logp, dtype=D, requires_grad=True)
    reference = reference_icepop_objective(ref_logp, train_old, train_old, engine, mask, advantages, 0.5, 2.0, 0.2, 0.2)
    reference.backward()
    assert value == pytest.approx(float(reference), rel=1e-12)
    assert torch.allclose(torch.tensor(grad, dtype=D), ref_logp.grad, rtol=1e-12, atol=1e-15)
    # kept tokens carry their ratio, not 1: e^0.3 and e^-0.2 (the defect: they were weighted 1)
    assert weights[0, 1].item() == pytest.approx(math.exp(0.3)) and weights[0, 3].item() == pytest.approx(
        math.exp(-0.2)
    )
    assert outside.tolist() == [[False, False, True, False, False], [False, True, False, False, False]]


def reference_weights(train, engine, mask, mode, level, low, high):
    """Per token, or per sequence from its trained tokens' log ratios: sequence the product, geometric the geometric
    mean. tis clip(rho, low, high); mask rho inside [low, high] else 0; reject 1 inside else 0."""
    out = []
    for i, row in enumerate(train):
        logs = [row[t] - engine[i][t] for t in range(len(row)) if mask[i][t]]
        weights = []
        for t in range(len(row)):
            log_rho = {
                "token": (row[t] - engine[i][t]) * mask[i][t],
                "sequence": sum(logs),
                "geometric": sum(logs) / max(len(logs), 1),
            }[level]
            rho = math.exp(log_rho)
            inside = low <= rho <= high
            weights.append(
                {"tis": min(max(rho, low), high), "mask": rho if inside else 0.0, "reject": 1.0 if inside else 0.0}[
                    mode
                ]
            )
        out.append(weights)
    return out


@pytest.mark.parametrize("mode", ["tis", "mask", "reject"])
@pytest.mark.parametrize("level", ["token", "sequence", "geometric"])
def test_mismatch_weights_match_the_reference_for_every_mode_and_level(mode, level):
    engine, train_old, _, mask, _ = icepop_case()
    t_mask = torch.tensor(mask, dtype=D)
    ids = sequence_ids((2, 5), None, t_mask.device)
    weights, _ = mismatch_weights(
        torch.tensor(train_old, dtype=D), torch.tensor(engine, dtype=D), t_mask, ids, mode, level, 0.5, 2.0
    )
    want = reference_weights(train_old, engine, mask, mode, level, 0.5, 2.0)
    assert torch.allclose(weights, torch.tensor(want, dtype=D), rtol=1e-12, atol=0)


def test_geometric_level_keeps_a_long_sequence_the_product_rejects_for_its_length():
    # Forty tokens of ratio e^0.05 each: the product e^2 = 7.4 leaves [0.5, 2], the geometric mean e^0.05 does not.
    engine = torch.zeros(1, 41, dtype=D)
    train = torch.full((1, 41), 0.05, dtype=D)
    mask = torch.ones(1, 41, dtype=D)
    mask[0, 0] = 0
    ids = sequence_ids((1, 41), None, mask.device)
    assert mismatch_weights(train, engine, mask, ids, "mask", "sequence", 0.5, 2.0)[1][0, 1:].all()
    weights, outside = mismatch_weights(train, engine, mask, ids, "mask", "geometric", 0.5, 2.0)
    assert not outside.any()
    assert weights[0, 1].item() == pytest.approx(math.exp(0.05), rel=1e-12)


def test_geometric_level_of_a_packed_row_takes_each_sequences_own_mean():
    train = torch.tensor([[0.0, 0.2, 0.4, 0.0, -0.6, 0.0]], dtype=D)
    mask = torch.tensor([[0, 1, 1, 0, 1, 0]], dtype=D)
    ids = sequence_ids((1, 6), torch.tensor([[0, 0, 0, 1, 1, 2]]), mask.device)
    weights, _ = mismatch_weights(train, torch.zeros(1, 6, dtype=D), mask, ids, "tis", "geometric", 0.0, 10.0)
    assert weights[0, :5].tolist() == pytest.approx([math.exp(0.3)] * 3 + [math.exp(-0.6)] * 2, rel=1e-12)


# -- rejected tokens leaving the counts --------------------------------------------------------------------------


def reference_aggregate_over_kept(per_token, mask, kept, mode, norm):
    """The aggregation of the kept tokens alone, by its definition: token-sum sum; token-mean sum / kept tokens;
    seq-mean-token-sum (1/N') sum_i sum_t; seq-mean-token-mean (1/N') sum_i (1/|kept y_i|) sum_t;
    seq-mean-token-sum-norm (1/N') sum_i sum_t / norm; N' = sequences with a kept token."""
    rows = [[t for t in range(len(m)) if m[t] and k[t]] for m, k in zip(mask, kept)]
    live = [r for r in rows if r]
    tokens = sum(len(r) for r in rows)
    sums = [sum(per_token[i][t] for t in r) for i, r in enumerate(rows) if r]
    if mode == "token-sum":
        return sum(sums)
    if mode == "token-mean":
        return sum(sums) / tokens
    if mode == "seq-mean-token-mean":
        return sum(s / len(r) for s, r in zip(sums, live)) / len(live)
    if mode == "seq-mean-token-sum":
        return sum(sums) / len(live)
    return sum(sums) / norm / len(live)


@pytest.mark.parametrize(
    "mode", ["token-sum", "token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]
)
def test_drop_from_count_gives_the_aggregation_of_the_kept_tokens_alone(mode):
    # Three sequences: one loses a token, one keeps all, one loses every token (it leaves the sequence count).
    mask = [[0, 1, 1, 1], [0, 0, 1, 1], [0, 1, 1, 0]]
    kept = [[0, 1, 0, 1], [0, 0, 1, 1], [0, 0, 0, 0]]
    per_token = [[0.0, 0.5, 7.0, -1.5], [0.0, 0.0, 2.0, 0.25], [0.0, 11.0, 13.0, 0.0]]
    t_mask, t_kept = torch.tensor(mask, dtype=D), torch.tensor(kept, dtype=D)
    ids = sequence_ids((3, 4), None, t_mask.device)
    weights = aggregation_weights(t_mask, mode, total_tokens=7, total_sequences=3, norm_constant=10).to(D)
    dropped = drop_from_count(weights, t_mask, t_kept, ids, mode, (7.0, 4.0, 3.0, 2.0))
    ours = float((torch.tensor(per_token, dtype=D) * dropped).sum())
    assert ours == pytest.approx(reference_aggregate_over_kept(per_token, mask, kept, mode, 10), rel=1e-6)
    assert not dropped[2].any()
