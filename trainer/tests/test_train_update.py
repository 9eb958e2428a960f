"""The update as the Trainer assembles it: TIS applied to the gradient, the KL penalty's direction, gradient
clipping and weight-decay groups, each checked against a hand-computed gradient or update rather than
against the metrics computed beside the loss."""
import functools

import pytest
import torch

from atk_trainer.train.batch import TrainBatch
from atk_trainer.train.config import parse_config
from atk_trainer.train.train import Trainer
from tiny import FIXED_SEQUENCES, pg_batch, tiny_policy


def trainer(overrides=None, seed=0):
    return Trainer(tiny_policy(seed), parse_config({"learning_rate": 1e-2, **(overrides or {})}))


def step_gradients(t, batch):
    """One train step; returns (metrics, each trainable parameter's gradient as the optimizer stepped on it)."""
    seen = []
    step = t.optimizer.step

    @functools.wraps(step)  # keeps the LR scheduler's mark on the step it wrapped
    def spy(*args, **kwargs):
        seen.append([p.grad.detach().clone() for p in t.params])
        return step(*args, **kwargs)

    t.optimizer.step = spy
    metrics = t.step(batch)
    assert len(seen) == 1
    return metrics, seen[0]


def sequence_logprobs(policy, token_ids):
    """log p(token t | tokens < t) for t >= 1, with gradient: (T-1,)."""
    ids = torch.tensor([token_ids])  # (1, T)
    logits = policy.logits(ids)[0, :-1].float()  # (T-1, V)
    return torch.log_softmax(logits, -1).gather(-1, ids[0, 1:, None])[:, 0]  # (T-1,)


def hand_pg_gradient(policy, batch, tis_cap=None):
    """The gradient of the token-mean policy-gradient loss, -A * w * logp per trained token over the batch's
    trained tokens, at ratio 1 (the first update); w = min(exp(logp - behaviour), tis_cap), or 1 without a cap."""
    policy.module.zero_grad(set_to_none=True)
    tokens = sum(sum(s["loss_mask"]) for s in batch["sequences"])
    loss = torch.zeros(())
    for s in batch["sequences"]:
        logp = sequence_logprobs(policy, s["token_ids"])  # (T-1,)
        mask = torch.tensor(s["loss_mask"][1:], dtype=torch.float32)  # (T-1,)
        behaviour = torch.tensor(s["logprobs"][1:], dtype=torch.float32)  # (T-1,)
        w = torch.ones_like(logp) if tis_cap is None else torch.exp(logp.detach() - behaviour).clamp(max=tis_cap)
        loss = loss - (s["advantage"] * w * logp * mask).sum() / tokens
    loss.backward()
    return [p.grad.detach().clone() for p in policy.module.parameters()]


def close(xs, ys, atol=1e-7, rtol=1e-4):
    return all(torch.allclose(x, y, atol=atol, rtol=rtol) for x, y in zip(xs, ys))


def norm(grads):
    return float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads)))


def zero_advantages(batch):
    for s in batch["sequences"]:
        s["advantage"] = 0.0
    return batch


# Behaviour logprob shifts, cycled over a sequence's trained tokens: TIS weights exp(-shift) of 0.82, 1.22
# and 0.90 where A > 0 (all under 1 + clip_high = 1.28), and 1.82 (capped at 1.5), 0.82 and 1.22 where A < 0
# (all over 1 - clip_low = 0.8), so every token stays inside the trust region and keeps its gradient.
SHIFTS = {True: [0.2, -0.2, 0.1], False: [-0.6, 0.2, -0.2]}


def mismatched(batch):
    for s in batch["sequences"]:
        shifts = SHIFTS[s["advantage"] > 0]
        k = 0
        for t, m in enumerate(s["loss_mask"]):
            if m:
                s["logprobs"][t] += shifts[k % len(shifts)]
                k += 1
    return batch


def test_step_with_tis_returns_the_gradient_weighted_by_the_capped_importance_weight():
    t = trainer({"tis_cap": 1.5, "grad_clip": 1e6})
    batch = mismatched(pg_batch(t.policy, FIXED_SEQUENCES))
    metrics, got = step_gradients(t, batch)
    assert metrics["clip_fraction"] == 0.0
    weighted, unweighted = hand_pg_gradient(tiny_policy(0), batch, 1.5), hand_pg_gradient(tiny_policy(0), batch)
    assert close(got, weighted)
    assert not close(got, unweighted)  # the weights are not all 1: TIS left out would show here


@pytest.mark.parametrize("lora", [None, {"rank": 4}])
@pytest.mark.parametrize("estimator", ["k1", "k3"])
def test_step_with_kl_penalty_lowers_the_kl_it_penalises(estimator, lora):
    t = trainer({"kl_coef": 1.0, "kl_estimator": estimator, "lora": lora, "learning_rate": 1e-3, "grad_clip": 1e6})
    with torch.no_grad():
        reference = [sequence_logprobs(t.policy, ids) for ids, _, _ in FIXED_SEQUENCES]  # (T-1,) each
        # Away from the reference, where k3's gradient is not 0; the reference (a copy, or the base
        # without adapters) stays where it was.
        generator = torch.Generator().manual_seed(1)
        for p in t.params:
            p.add_(0.05 * torch.randn(p.shape, generator=generator))
    # Advantages 0: the policy-gradient term has no gradient, so the KL penalty alone moves the weights.
    batch = zero_advantages(pg_batch(t.policy, FIXED_SEQUENCES))

    @torch.no_grad()
    def penalised_kl():
        total = 0.0
        for (ids, prompt, _), ref in zip(FIXED_SEQUENCES, reference):
            logp, trained = sequence_logprobs(t.policy, ids), slice(prompt - 1, None)
            log_ratio = (ref - logp)[trained]
            kl = -log_ratio if estimator == "k1" else torch.exp(log_ratio) - log_ratio - 1.0
            total += float(kl.sum())
        return total

    before = penalised_kl()
    assert abs(before) > 1e-3
    t.step(batch)
    assert penalised_kl() < before


def test_step_without_a_kl_penalty_keeps_no_reference_and_adds_no_kl_term():
    # kl_coef 0 (the default): no frozen copy of the weights is held (it would double the memory) and the
    # loss has no KL term, so the gradient is the plain policy-gradient one and no kl metric is reported.
    t = trainer({"grad_clip": 1e6})
    assert t.reference is None
    batch = pg_batch(t.policy, FIXED_SEQUENCES)
    expected = hand_pg_gradient(t.policy, batch)
    metrics, grads = step_gradients(t, batch)
    assert "kl" not in metrics
    assert close(grads, expected)


def test_step_multiplies_the_gradient_by_grad_scale_and_reports_the_unscaled_loss():
    # Under FSDP on N CUDA ranks Trainer sets grad_scale = N: FSDP averages the ranks' gradients while the loss
    # is normalised over the whole batch, so each rank's gradient must be N times its share for the average
    # to be the sum. Two ranks need two GPUs (test_fsdp_cuda.py runs one, where N = 1), so the scale is set
    # here as __init__ sets it for two; a scale divided instead of multiplied would halve every update.
    one, two = trainer({"grad_clip": 1e6}), trainer({"grad_clip": 1e6})
    two.grad_scale = 2.0
    batch = pg_batch(one.policy, FIXED_SEQUENCES)
    expected = hand_pg_gradient(tiny_policy(0), batch)
    metrics_one, grads_one = step_gradients(one, batch)
    metrics_two, grads_two = step_gradients(two, batch)
    assert close(grads_one, expected)
    assert close(grads_two, [2.0 * g for g in expected])
    assert metrics_two["loss"] == metrics_one["loss"]  # the objective's value, not the backward's scaled one


def test_step_updates_with_the_gradient_scaled_to_grad_clip():
    # adam_eps 1 makes AdamW's first update about lr * g / (|g| + 1), close to linear in the gradient, so the
    # clipped update differs from the unclipped one (with a tiny eps both are lr * sign(g)).
    overrides = {"adam_eps": 1.0, "learning_rate": 1e-1}
    free = trainer({**overrides, "grad_clip": 1e6})
    batch = pg_batch(free.policy, FIXED_SEQUENCES)
    metrics, raw = step_gradients(free, batch)
    assert metrics["grad_norm"] == pytest.approx(norm(raw), rel=1e-5)
    clip = 0.1 * norm(raw)
    scaled = [g * (clip / (norm(raw) + 1e-6)) for g in raw]  # clip_grad_norm_'s coefficient

    t = trainer({**overrides, "grad_clip": clip})
    metrics, got = step_gradients(t, batch)
    assert metrics["grad_norm"] == pytest.approx(norm(raw), rel=1e-5)  # the norm before clipping
    assert norm(got) == pytest.approx(clip, rel=1e-5)
    assert close(got, scaled)

    # The same update from a plain AdamW given the scaled gradient, and not the unclipped one's.
    def plain_update(grads):
        policy = tiny_policy(0)
        ps = list(policy.module.parameters())
        optimizer = torch.optim.AdamW(ps, lr=1e-1, betas=(0.9, 0.999), eps=1.0, weight_decay=0.0)
        for p, g in zip(ps, grads):
            p.grad = g.clone()
        optimizer.step()
        return [p.detach() for p in ps]

    trained = [p.detach() for p in t.policy.module.parameters()]
    assert close(trained, plain_update(scaled), atol=1e-6, rtol=1e-5)
    assert not close(trained, plain_update(raw), atol=1e-6, rtol=1e-5)


def test_optimizer_decays_matrices_and_leaves_norms_and_biases_alone():
    lr, decay = 0.1, 0.5
    t = trainer({"weight_decay": decay, "learning_rate": lr})
    named = dict(t.policy.module.named_parameters())
    group_decay = {id(p): g["weight_decay"] for g in t.optimizer.param_groups for p in g["params"]}
    assert {n: group_decay[id(p)] for n, p in named.items()} == {
        n: (decay if p.dim() >= 2 else 0.0) for n, p in named.items()
    }
    assert {n for n, p in named.items() if p.dim() < 2} >= {"model.norm.weight", "model.layers.0.self_attn.q_proj.bias"}
    # Through a step with zero gradients (advantages 0) AdamW moves a weight only by its decay: p *= 1 - lr * wd.
    before = {n: p.detach().clone() for n, p in named.items()}
    assert float(before["model.norm.weight"].abs().min()) > 0.1  # a decayed norm gain would show
    _, grads = step_gradients(t, zero_advantages(pg_batch(t.policy, FIXED_SEQUENCES)))
    assert all(float(g.abs().max()) == 0.0 for g in grads)
    for n, p in named.items():
        expected = before[n] * (1 - lr * decay) if p.dim() >= 2 else before[n]
        assert torch.allclose(p.detach(), expected, rtol=0, atol=1e-7), n


def test_metrics_are_means_over_trained_tokens_and_updates():
    # Two updates over 10 trained tokens: per-token sums divide by 20, per-update ones by 2, and the
    # mismatch (measured on the first update only) by 10. updates_per_step: 1 would hide each of these.
    t = Trainer(tiny_policy(0), parse_config({"updates_per_step": 2}))
    batch = TrainBatch(loss="pg", micro_batches=[], tokens=10, sequences=3, padded_tokens=16)
    totals = {
        "loss": 3.0,
        "entropy_sum": 8.0,
        "grad_norm": 5.0,
        "clipped_tokens": 4.0,
        "mismatch_sum": 2.0,
        "tis_weight_sum": 22.0,
        "kl_sum": 1.0,
    }
    metrics = t._metrics(batch, totals, mismatch_max=0.5, lr=0.1, seconds=4.0)
    expected = {
        "loss": 1.5,
        "entropy": 0.4,
        "grad_norm": 2.5,
        "tokens_per_s": 5.0,
        "clip_fraction": 0.2,
        "mismatch_mean": 0.2,
        "mismatch_max": 0.5,
        "tis_weight_mean": 1.1,
        "kl": 0.05,
    }
    assert {k: metrics[k] for k in expected} == pytest.approx(expected)


def hand_gradient(policy, batch, sequence_loss):
    """The gradient of sum over the batch's sequences of sequence_loss(logp, behaviour, advantage, tokens, count):
    logp (k,) with gradient and behaviour (k,) on the sequence's k trained tokens, `tokens` trained in the
    batch, `count` sequences."""
    policy.module.zero_grad(set_to_none=True)
    tokens = sum(sum(s["loss_mask"]) for s in batch["sequences"])
    count = len(batch["sequences"])
    loss = torch.zeros(())
    for s in batch["sequences"]:
        trained = torch.tensor(s["loss_mask"][1:], dtype=torch.bool)  # (T-1,)
        logp = sequence_logprobs(policy, s["token_ids"])[trained]  # (k,)
        behaviour = torch.tensor(s["logprobs"][1:], dtype=torch.float32)[trained]  # (k,)
        loss = loss + sequence_loss(logp, behaviour, s["advantage"], tokens, count)
    loss.backward()
    return [p.grad.detach().clone() for p in policy.module.parameters()]


def test_step_with_gspo_returns_the_sequence_objective_s_gradient_with_the_trainer_s_own_old_policy():
    # At the first update s_i = 1, so GSPO's gradient is -(1/G) sum_i A_i mean_t grad log pi_t (paper eq. 10).
    # The engine's logprobs are far off (mismatched): taken as the old policy, every s_i would leave GSPO's
    # 3e-4 clip range and the gradient would be 0; GSPO's old policy is the trainer's own pre-update logprobs.
    t = trainer({"policy_loss": "gspo", "clip_low": 3e-4, "clip_high": 4e-4, "loss_aggregation": "seq-mean-token-mean"})
    t.config.grad_clip = 1e6
    batch = mismatched(pg_batch(t.policy, FIXED_SEQUENCES))
    metrics, got = step_gradients(t, batch)
    want = hand_gradient(tiny_policy(0), batch, lambda logp, _b, a, _n, count: -a * logp.mean() / count)
    assert close(got, want)
    assert norm(got) > 1e-3
    assert metrics["clip_fraction"] == 0.0


def test_step_with_cispo_returns_the_gradient_weighted_by_the_clipped_detached_ratio_to_the_engine():
    # ratios pi / mu of the mismatched batch: 0.82, 1.22, 0.90 (A > 0) and 1.82, 0.82, 1.22 (A < 0); with
    # clip_high 0.1 the weights over 1.1 are clipped, and no lower clip (clip_low 1): every token has a gradient.
    t = trainer({"policy_loss": "cispo", "clip_low": 1.0, "clip_high": 0.1, "grad_clip": 1e6})
    batch = mismatched(pg_batch(t.policy, FIXED_SEQUENCES))
    metrics, got = step_gradients(t, batch)

    def cispo(logp, behaviour, a, tokens, _count):
        w = torch.exp(logp.detach() - behaviour).clamp(0.0, 1.1)
        return -(w * a * logp).sum() / tokens

    assert close(got, hand_gradient(tiny_policy(0), batch, cispo))
    assert not close(got, hand_pg_gradient(tiny_policy(0), batch))  # the weights matter
    assert 0 < metrics["clip_fraction"] < 1


@pytest.mark.parametrize("mode", ["mask", "reject"])
def test_step_with_token_mismatch_masking_drops_the_tokens_whose_ratio_leaves_the_range(mode):
    # rho = trainer / engine: 0.82 (out), 1.22, 0.90 (A > 0); 1.82 (out), 0.82 (out), 1.22 (A < 0) in [0.85, 1.25].
    # mask (IcePop) weighs the tokens it keeps by rho; reject by 1.
    mismatch = {"mode": mode, "level": "token", "low": 0.85, "high": 1.25}
    t = trainer({"mismatch": mismatch, "grad_clip": 1e6})
    batch = mismatched(pg_batch(t.policy, FIXED_SEQUENCES))
    metrics, got = step_gradients(t, batch)
    outside = []

    def masked(logp, behaviour, a, tokens, _count):
        rho = torch.exp(logp.detach() - behaviour)
        keep = ((rho >= 0.85) & (rho <= 1.25)).float()
        outside.append(float((1 - keep).sum()))
        weight = keep * rho if mode == "mask" else keep
        return -(weight * a * logp).sum() / tokens

    assert close(got, hand_gradient(tiny_policy(0), batch, masked))
    assert not close(got, hand_pg_gradient(tiny_policy(0), batch))
    tokens = sum(sum(s["loss_mask"]) for s in batch["sequences"])
    assert metrics["mismatch_masked_fraction"] == pytest.approx(sum(outside) / tokens)
    assert 0 < metrics["mismatch_masked_fraction"] < 1


def test_step_with_sequence_tis_weights_each_sequence_by_its_capped_likelihood_ratio():
    mismatch = {"mode": "tis", "level": "sequence", "low": 0.0, "high": 1.5}
    t = trainer({"mismatch": mismatch, "grad_clip": 1e6})
    batch = mismatched(pg_batch(t.policy, FIXED_SEQUENCES))
    _, got = step_gradients(t, batch)

    def sequence_tis(logp, behaviour, a, tokens, _count):
        w = torch.exp((logp.detach() - behaviour).sum()).clamp(max=1.5)
        return -(w * a * logp).sum() / tokens

    assert close(got, hand_gradient(tiny_policy(0), batch, sequence_tis))
    assert not close(got, hand_pg_gradient(tiny_policy(0), batch, tis_cap=1.5))  # not the token-level weights
