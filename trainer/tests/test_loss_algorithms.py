"""GSPO, CISPO and the trainer/engine mismatch correction, each against a reference written independently here
(per-sequence loops in float64, from the papers' formulas), values and gradients, with the edge cases: equal
rewards (zero advantages), a sequence with no trained token, a fully masked row."""
import math

import pytest
import torch

from atk_trainer.train.loss import (
    cispo_loss,
    gspo_loss,
    mismatch_weights,
    sequence_ids,
    sequence_sums,
)

D = torch.float64

# Four sequences (rows) of trained tokens with per-token log ratios log(pi/pi_old) chosen so that, with GSPO's
# clip range [1 - 3e-4, 1 + 4e-4], the length-normalised ratio s_i = exp(mean log ratio) is
#   row 0: exp(1e-4)  inside,         A = +1.5 -> gradient
#   row 1: exp(2e-3)  above 1 + 4e-4, A = +1   -> clipped, no gradient
#   row 2: exp(-2e-3) below 1 - 3e-4, A = -1   -> clipped, no gradient
#   row 3: exp(2e-3)  above,          A = -0.5 -> the unclipped side of the min: gradient
LOG_RATIOS = [
    [0.0, 3e-4, -1e-4, 0.0],
    [0.0, 1e-3, 3e-3, 2e-3],
    [0.0, -1e-3, -3e-3, 0.0],
    [0.0, 4e-3, 0.0, 0.0],
]
MASK = [[0, 1, 1, 0], [0, 1, 1, 1], [0, 1, 1, 0], [0, 1, 0, 0]]
ADVANTAGES = [1.5, 1.0, -1.0, -0.5]
LOW, HIGH = 3e-4, 4e-4


def rows():
    """(logp, old, advantages (B, T) per token, mask), float64; logp is a leaf with gradient."""
    old = torch.tensor([[-1.0, -2.0, -0.5, -3.0]] * 4, dtype=D)
    logp = (old + torch.tensor(LOG_RATIOS, dtype=D)).requires_grad_(True)
    advantages = torch.tensor(ADVANTAGES, dtype=D)[:, None].expand(4, 4).contiguous()
    return logp, old, advantages, torch.tensor(MASK, dtype=D)


def seq_mean_token_mean(mask):
    """GSPO's aggregation, 1/G sum_i 1/|y_i| sum_t, as per-token weights (loss.aggregation_weights works in float32)."""
    return mask / (mask.sum(-1, keepdim=True).clamp(min=1) * mask.shape[0])


def reference_gspo_objective(logp, old, mask, advantages, low, high):
    """-J_GSPO(theta) of the paper (eq. 5-7), written per sequence: -(1/G) sum_i min(s_i A_i, clip(s_i) A_i),
    s_i = (pi(y_i) / pi_old(y_i)) ** (1 / |y_i|); a sequence with no trained token adds nothing."""
    total = torch.zeros((), dtype=D)
    count = logp.shape[0]
    for i in range(count):
        trained = [t for t in range(logp.shape[1]) if mask[i, t] == 1]
        if not trained:
            continue
        log_likelihood_ratio = sum(logp[i, t] - old[i, t] for t in trained)
        s = torch.exp(log_likelihood_ratio / len(trained))
        a = float(advantages[i, trained[0]])
        total = total - torch.minimum(s * a, torch.clamp(s, 1 - low, 1 + high) * a) / count
    return total


def test_gspo_loss_aggregated_per_sequence_equals_the_papers_sequence_objective_in_value_and_gradient():
    logp, old, advantages, mask = rows()
    ids = sequence_ids((4, 4), None, logp.device)
    per_token, clipped = gspo_loss(logp, old, advantages, mask, ids, LOW, HIGH)
    weights = seq_mean_token_mean(mask)
    ours = (per_token * weights).sum()
    ours.backward()
    ours_grad = logp.grad.clone()

    logp.grad = None
    reference = reference_gspo_objective(logp, old, mask, advantages, LOW, HIGH)
    reference.backward()
    assert float(ours) == pytest.approx(float(reference), rel=1e-12, abs=1e-15)
    assert torch.allclose(ours_grad, logp.grad, rtol=1e-10, atol=1e-15)
    # The clip is decided per sequence: rows 1 and 2 clipped on every trained token, rows 0 and 3 on none.
    assert [bool((clipped[i] & (mask[i] == 1)).any()) for i in range(4)] == [False, True, True, False]
    assert torch.count_nonzero(ours_grad[1:3]) == 0
    # Rows with gradient: d(-J)/d logp_t = -A_i s_i / (G |y_i|) on each trained token of row i.
    s0, s3 = math.exp(1e-4), math.exp(4e-3)
    assert ours_grad[0].tolist() == pytest.approx([0.0, -1.5 * s0 / 8, -1.5 * s0 / 8, 0.0], rel=1e-12)
    assert ours_grad[3].tolist() == pytest.approx([0.0, 0.5 * s3 / 4, 0.0, 0.0], rel=1e-12)


def test_gspo_loss_passes_gradcheck_of_its_aggregated_objective():
    # Finite differences of the aggregated loss match the stop-gradient form's analytic gradient (away from the
    # clip boundaries), which is what makes GSPO-token the sequence objective's gradient.
    _, old, advantages, mask = rows()
    ids = sequence_ids((4, 4), None, old.device)
    weights = seq_mean_token_mean(mask)

    def aggregated(logp):
        return (gspo_loss(logp, old, advantages, mask, ids, LOW, HIGH)[0] * weights).sum()

    logp = rows()[0].detach().requires_grad_(True)
    assert torch.autograd.gradcheck(aggregated, (logp,), eps=1e-7, atol=1e-9)


def test_gspo_loss_is_zero_with_no_gradient_for_equal_rewards_and_rows_with_no_trained_token():
    logp, old, _, mask = rows()
    mask[2] = 0  # a fully masked row (a zero-length completion)
    ids = sequence_ids((4, 4), None, logp.device)
    per_token, _ = gspo_loss(logp, old, torch.zeros(4, 4, dtype=D), mask, ids, LOW, HIGH)  # all-equal rewards
    (per_token * mask).sum().backward()
    assert torch.count_nonzero(per_token.detach()) == 0
    assert torch.count_nonzero(logp.grad) == 0
    logp.grad = None
    per_token, _ = gspo_loss(logp, old, torch.ones(4, 4, dtype=D), mask, ids, LOW, HIGH)
    assert torch.isfinite(per_token).all()
    (per_token * mask).sum().backward()
    assert torch.count_nonzero(logp.grad[2]) == 0


def test_gspo_loss_takes_each_packed_sequence_s_own_mean():
    # One packed row holding rows 0 and 3 end to end, then padding: the same per-token losses as unpacked.
    logp, old, advantages, mask = rows()
    ids = sequence_ids((4, 4), None, logp.device)
    unpacked, _ = gspo_loss(logp, old, advantages, mask, ids, LOW, HIGH)
    cat = lambda x: torch.cat([x[0], x[3], torch.zeros(2, dtype=x.dtype)])[None]  # noqa: E731  (1, 10)
    segments = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1, 2, 2]])
    packed_ids = sequence_ids((1, 10), segments, logp.device)
    packed, _ = gspo_loss(cat(logp), cat(old), cat(advantages), cat(mask), packed_ids, LOW, HIGH)
    assert torch.allclose(packed[0, :8], torch.cat([unpacked[0], unpacked[3]]))


def reference_cispo(logp, old, advantages, low, high):
    """MiniMax-M1 eq. 4, per token: value -w A log pi with w = clip(pi / pi_old, 1 - low, 1 + high) a constant,
    so d/d log pi = -w A."""
    value = [[0.0] * len(row) for row in logp]
    grad = [[0.0] * len(row) for row in logp]
    for i, row in enumerate(logp):
        for t, lp in enumerate(row):
            w = min(max(math.exp(lp - old[i][t]), 1 - low), 1 + high)
            value[i][t] = -w * advantages[i][t] * lp
            grad[i][t] = -w * advantages[i][t]
    return value, grad


def test_cispo_loss_returns_the_clipped_detached_weight_times_the_reinforce_term_and_its_gradient():
    # ratios 3.0 (clipped to 1 + 1 = 2), 0.2 (kept: with low = 1 there is no lower clip), 1.5 (kept), and
    # a token with A = 0 (all-equal rewards): no loss, no gradient.
    old = torch.tensor([[-2.0, -1.0, -1.5, -0.7]], dtype=D)
    logp = (old + torch.tensor([[math.log(3.0), math.log(0.2), math.log(1.5), 0.3]], dtype=D)).requires_grad_(True)
    advantages = torch.tensor([[1.0, -2.0, 0.5, 0.0]], dtype=D)
    loss, clipped = cispo_loss(logp, old, advantages, clip_low=1.0, clip_high=1.0)
    loss.sum().backward()
    value, grad = reference_cispo(logp.tolist(), old.tolist(), advantages.tolist(), 1.0, 1.0)
    assert torch.allclose(loss, torch.tensor(value, dtype=D), rtol=1e-12, atol=0)
    assert torch.allclose(logp.grad, torch.tensor(grad, dtype=D), rtol=1e-12, atol=0)
    assert clipped.tolist() == [[True, False, False, False]]
    # Every token with an advantage keeps a gradient, the clipped one included (PPO would zero it).
    assert torch.count_nonzero(logp.grad[0, :3]) == 3


def test_cispo_loss_clips_the_weight_from_below_with_a_small_low():
    old = torch.zeros(1, 1, dtype=D)
    logp = torch.tensor([[math.log(0.5)]], dtype=D, requires_grad=True)
    loss, clipped = cispo_loss(logp, old, torch.tensor([[2.0]], dtype=D), clip_low=0.2, clip_high=0.2)
    loss.sum().backward()
    assert logp.grad.item() == pytest.approx(-0.8 * 2.0)  # w = max(0.5, 0.8)
    assert clipped.item()


def reference_mismatch(train, behaviour, mask, mode, level, low, high):
    """Per token (or per row's product of trained-token ratios): tis -> clip(rho, low, high);
    mask -> rho inside [low, high], 0 outside (IcePop's M)."""
    weights, outside = [], []
    for i, row in enumerate(train):
        trained = [t for t in range(len(row)) if mask[i][t]]
        row_log = sum(row[t] - behaviour[i][t] for t in trained)
        w_row, o_row = [], []
        for t in range(len(row)):
            log_rho = row_log if level == "sequence" else (row[t] - behaviour[i][t]) * mask[i][t]
            rho = math.exp(log_rho)
            if mode == "tis":
                w_row.append(min(max(rho, low), high))
                o_row.append(False)
            else:
                o_row.append(rho < low or rho > high)
                w_row.append(0.0 if o_row[-1] else rho)
        weights.append(w_row)
        outside.append(o_row)
    return weights, outside


@pytest.mark.parametrize("mode", ["tis", "mask"])
@pytest.mark.parametrize("level", ["token", "sequence"])
def test_mismatch_weights_match_the_reference_and_carry_no_gradient(mode, level):
    behaviour = torch.tensor([[-1.0, -1.0, -2.0, -0.1], [-1.0, -0.3, -0.2, -4.0], [-1.0, -1.0, -1.0, -1.0]], dtype=D)
    shift = torch.tensor([[0.0, 0.9, -0.1, 0.0], [0.0, -0.2, -0.3, 0.1], [0.0, 0.0, 0.0, 0.0]], dtype=D)
    train = (behaviour + shift).requires_grad_(True)
    mask = torch.tensor([[0, 1, 1, 0], [0, 1, 1, 1], [0, 0, 0, 0]], dtype=D)  # the last row fully masked
    ids = sequence_ids((3, 4), None, train.device)
    weights, outside = mismatch_weights(train, behaviour, mask, ids, mode, level, 0.5, 2.0)
    want_w, want_out = reference_mismatch(train.tolist(), behaviour.tolist(), mask.tolist(), mode, level, 0.5, 2.0)
    assert torch.allclose(weights, torch.tensor(want_w, dtype=D), rtol=1e-12, atol=0)
    assert outside.tolist() == want_out
    assert not weights.requires_grad
    assert torch.isfinite(weights).all()


def test_mismatch_weights_mask_a_sequence_whose_product_leaves_the_range_though_no_token_does():
    # Three tokens of ratio e^0.3 = 1.35 each: every token inside [0.5, 2], their product e^0.9 = 2.46 outside.
    behaviour = torch.zeros(1, 4, dtype=D)
    train = torch.tensor([[0.0, 0.3, 0.3, 0.3]], dtype=D)
    mask = torch.tensor([[0, 1, 1, 1]], dtype=D)
    ids = sequence_ids((1, 4), None, train.device)
    assert not mismatch_weights(train, behaviour, mask, ids, "mask", "token", 0.5, 2.0)[1].any()
    assert mismatch_weights(train, behaviour, mask, ids, "mask", "sequence", 0.5, 2.0)[1].all()


def test_mismatch_weights_tis_with_low_0_is_the_truncated_importance_weight():
    train = torch.tensor([[math.log(0.5), math.log(0.1)]], dtype=D)
    behaviour = torch.tensor([[math.log(0.1), math.log(0.2)]], dtype=D)
    ids = sequence_ids((1, 2), None, train.device)
    weights, _ = mismatch_weights(train, behaviour, torch.ones(1, 2, dtype=D), ids, "tis", "token", 0.0, 2.0)
    assert torch.allclose(weights, torch.tensor([[2.0, 0.5]], dtype=D))  # 5 capped to 2; 0.5 kept


def test_sequence_sums_sum_over_each_sequence_of_packed_rows():
    values = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    segments = torch.tensor([[0, 0, 1, 2], [0, 1, 1, 1]])
    ids = sequence_ids((2, 4), segments, values.device)
    assert sequence_sums(values, ids).tolist() == [[3.0, 3.0, 3.0, 4.0], [5.0, 21.0, 21.0, 21.0]]
    assert sequence_sums(values, sequence_ids((2, 4), None, values.device)).tolist() == [[10.0] * 4, [26.0] * 4]


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_mismatch_weights_mask_keeps_a_ratio_exactly_at_either_bound(level):
    # The kept range is [low, high], bounds included: a ratio of exactly 1 (train == behaviour) stays in the loss
    # when low is 1 and when high is 1, at either level.
    behaviour = torch.tensor([[-1.0, -0.5, -2.0]], dtype=D)
    mask = torch.tensor([[0, 1, 1]], dtype=D)
    ids = sequence_ids((1, 3), None, behaviour.device)
    for low, high in [(1.0, 2.0), (0.5, 1.0)]:
        weights, outside = mismatch_weights(behaviour.clone(), behaviour, mask, ids, "mask", level, low, high)
        assert (weights.tolist(), outside.tolist()) == ([[1.0, 1.0, 1.0]], [[False, False, False]])
