"""The Trainer end to end on a tiny random qwen2: learning, exact resume, split invariance, metrics."""
import copy
import json
import math
import os
import random
import time

import pytest
import torch

from atk_trainer.train import lora as lora_lib
from atk_trainer.train.batch import BatchError
from atk_trainer.train.config import parse_config
from atk_trainer.train.train import Trainer, lr_factor
from tiny import FIXED_SEQUENCES, pg_batch, tiny_policy


def trainer(overrides=None, seed=0):
    return Trainer(tiny_policy(seed), parse_config({"learning_rate": 1e-2, **(overrides or {})}))


def sft_batch():
    return {
        "loss": "sft",
        "sequences": [{"token_ids": ids, "loss_mask": [0] * p + [1] * (len(ids) - p)} for ids, p, _ in FIXED_SEQUENCES],
    }


def params(t):
    return [p.detach().clone() for p in t.policy.module.parameters()]


def test_step_returns_a_falling_loss_on_a_fixed_batch():
    t = trainer()
    losses = [t.step(sft_batch())["loss"] for _ in range(30)]
    assert losses[-1] < 0.5 * losses[0]
    assert t.policy_version == 30


def test_sft_step_returns_the_share_of_reference_tokens_ranked_first():
    t = trainer()
    batch = sft_batch()
    first = t.step(batch)["token_accuracy"]
    for _ in range(30):
        t.step(batch)
    with torch.no_grad():  # counted by hand from the logits the next step's forward sees
        ids = [torch.tensor([s["token_ids"]]) for s in batch["sequences"]]
        hits = trained = 0
        for seq, x in zip(batch["sequences"], ids):
            top = t.policy.logits(x)[0, :-1].argmax(-1)  # (T-1,) prediction of token t+1
            for t_, m in enumerate(seq["loss_mask"][1:]):
                trained += m
                hits += m * int(top[t_] == seq["token_ids"][t_ + 1])
    metrics = t.step(batch)
    last = metrics["token_accuracy"]
    assert 0 < metrics["peak_rss_mb"] < 64 * 1024  # the process's high-water mark in MiB
    assert 0 <= first < last <= 1
    assert last == pytest.approx(hits / trained)


def test_reinforce_raises_the_rewarded_tokens_probability():
    # A one-step bandit: after prompt [1, 2] the policy picks a token; only token 7 is rewarded.
    torch.manual_seed(0)
    t = trainer({"learning_rate": 3e-2})
    prompt = torch.tensor([[1, 2]])

    def p_rewarded():
        with torch.no_grad():
            return torch.softmax(t.policy.logits(prompt)[0, -1], -1)[7].item()

    before = p_rewarded()
    for _ in range(40):
        probs = torch.softmax(t.policy.logits(prompt)[0, -1].detach(), -1)
        picks = torch.multinomial(probs, 32, replacement=True).tolist()
        rewards = [1.0 if k == 7 else 0.0 for k in picks]
        baseline = sum(rewards) / len(rewards)
        t.step(
            {
                "loss": "pg",
                "sequences": [
                    {
                        "token_ids": [1, 2, k],
                        "loss_mask": [0, 0, 1],
                        "logprobs": [0, 0, math.log(probs[k])],
                        "advantage": r - baseline,
                    }
                    for k, r in zip(picks, rewards)
                ],
            }
        )
    assert before < 0.1 and p_rewarded() > 0.5


@pytest.mark.parametrize("lora", [None, {"rank": 4, "alpha": 8, "dropout": 0.1}])
def test_save_then_load_returns_the_identical_next_step(tmp_path, lora):
    overrides = {"lora": lora, "lr_schedule": "cosine", "warmup_steps": 1, "total_steps": 10}
    a = trainer(overrides)
    batch = pg_batch(a.policy, FIXED_SEQUENCES)
    for _ in range(3):
        a.step(batch)
    a.save(str(tmp_path / "ckpt"))
    expected = a.step(batch)
    expected_params = params(a)

    # Another seed: all trained state must come from the checkpoint (a LoRA keeps the same base model).
    b = trainer({**overrides, "seed": 1}, seed=0 if lora else 1)
    assert b.load(str(tmp_path / "ckpt")) == {"dir": str(tmp_path / "ckpt"), "policy_version": 3, "step": 3}
    got = b.step(batch)
    for key in ("loss", "grad_norm", "lr", "entropy", "clip_fraction", "policy_version"):
        assert got[key] == expected[key], key
    assert all(torch.equal(x, y) for x, y in zip(params(b), expected_params))


def test_load_rejects_a_checkpoint_whose_lora_setting_differs(tmp_path):
    trainer({"lora": {"rank": 2}}).save(str(tmp_path / "lora"))
    with pytest.raises(ValueError, match="checkpoint and config disagree on LoRA"):
        trainer().load(str(tmp_path / "lora"))
    with pytest.raises(FileNotFoundError, match="not a checkpoint written by atk_trainer"):
        trainer().load(str(tmp_path / "nowhere"))


def test_load_restores_rng_state(tmp_path):
    a = trainer()
    a.step(pg_batch(a.policy, FIXED_SEQUENCES))
    a.save(str(tmp_path / "ckpt"))
    expected = (torch.rand(4).tolist(), random.random())
    b = trainer(seed=3)
    torch.rand(7), random.random()
    b.load(str(tmp_path / "ckpt"))
    assert (torch.rand(4).tolist(), random.random()) == expected


def test_save_writes_hf_layout_atomically(tmp_path):
    t = trainer()
    target = tmp_path / "step-00001"
    t.save(str(target))
    t.save(str(target))  # overwriting an existing checkpoint goes through the same rename
    assert sorted(os.listdir(tmp_path)) == ["step-00001"]
    assert {"config.json", "model.safetensors", "trainer_state.pt"} <= set(os.listdir(target))
    state = torch.load(target / "trainer_state.pt", weights_only=False)
    assert state["config"]["learning_rate"] == 1e-2 and set(state["rng"]) == {"python", "torch", "cuda"}


def test_save_writes_a_peft_layout_adapter(tmp_path):
    from atk_trainer.model.safetensors_io import load_file

    t = trainer({"lora": {"rank": 2, "alpha": 4, "target_modules": ["q_proj", "v_proj"]}})
    t.save(str(tmp_path / "a"))
    config = json.loads((tmp_path / "a" / "adapter_config.json").read_text())
    assert (config["peft_type"], config["r"], config["lora_alpha"], config["target_modules"]) == (
        "LORA",
        2,
        4.0,
        ["q_proj", "v_proj"],
    )
    keys = sorted(load_file(str(tmp_path / "a" / "adapter_model.safetensors")))
    assert len(keys) == 2 * 2 * 2  # layers x modules x (A, B)
    assert keys[0] == "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"
    assert not (tmp_path / "a" / "model.safetensors").exists()


@pytest.mark.parametrize(
    "aggregation", ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]
)
def test_step_returns_the_same_update_however_the_batch_is_split(aggregation):
    # Adam divides by sqrt(v) + eps, so a step moves by up to lr / eps per unit of gradient change: with
    # the default eps 1e-8 summation-order noise (1e-11..1e-8) moves near-zero-gradient weights by up
    # to 1e-5. eps 1e-3 bounds that at 1e-7, and a wrongly weighted gradient still moves them by ~1e-3.
    whole = trainer({"loss_aggregation": aggregation, "micro_batch_tokens": 4096, "adam_eps": 1e-3})
    split = trainer({"loss_aggregation": aggregation, "micro_batch_tokens": 8, "adam_eps": 1e-3})
    batch = pg_batch(whole.policy, FIXED_SEQUENCES)
    a, b = whole.step(batch), split.step(batch)
    assert a["micro_batches"] < b["micro_batches"] == 5
    assert b["loss"] == pytest.approx(a["loss"], abs=1e-6)
    assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=1e-5)
    assert all(torch.allclose(x, y, atol=1e-6) for x, y in zip(params(whole), params(split)))


def test_step_returns_mismatch_against_behaviour_logprobs():
    t = trainer()
    batch = pg_batch(t.policy, FIXED_SEQUENCES)
    assert t.step(batch)["mismatch_max"] < 1e-5
    shifted = pg_batch(t.policy, FIXED_SEQUENCES)
    for s in shifted["sequences"]:
        s["logprobs"] = [lp - 0.5 * m for lp, m in zip(s["logprobs"], s["loss_mask"])]
    metrics = t.step(shifted)
    assert metrics["mismatch_mean"] == pytest.approx(0.5, abs=1e-5)
    # Ratio exp(0.5) = 1.65 is past 1 + clip_high: the clipped branch is taken on the 12 trained tokens with
    # A > 0 (5 + 3 + 4) and the unclipped one, smaller, on the 6 with A < 0.
    assert metrics["clip_fraction"] == pytest.approx(12 / 18)


def test_step_returns_the_largest_mismatch_over_its_micro_batches():
    # One sequence a micro-batch, each shifted by its own amount: the largest gap is in the second one, so
    # a max taken wrongly over the micro-batches (the last one's, a min, a sum) shows.
    t = trainer({"micro_batch_tokens": 8})
    batch = pg_batch(t.policy, FIXED_SEQUENCES)
    shifts = [0.1, 0.5, 0.2, 0.3, 0.4]
    for s, shift in zip(batch["sequences"], shifts):
        s["logprobs"] = [lp - shift * m for lp, m in zip(s["logprobs"], s["loss_mask"])]
    metrics = t.step(batch)
    assert metrics["micro_batches"] == 5
    assert metrics["mismatch_max"] == pytest.approx(0.5, abs=1e-5)
    trained = [sum(s["loss_mask"]) for s in batch["sequences"]]
    expected_mean = sum(n * shift for n, shift in zip(trained, shifts)) / sum(trained)
    assert metrics["mismatch_mean"] == pytest.approx(expected_mean, abs=1e-5)


def test_step_returns_its_own_wall_time_and_the_throughput_over_it():
    t = trainer()
    batch = pg_batch(t.policy, FIXED_SEQUENCES)
    start = time.perf_counter()
    metrics = t.step(batch)
    elapsed = time.perf_counter() - start
    assert 0 < metrics["seconds"] <= elapsed
    assert metrics["tokens_per_s"] == pytest.approx(metrics["tokens"] / metrics["seconds"])


def test_a_builtin_policy_gets_atk_s_own_lora_even_where_peft_is_installed(monkeypatch):
    # peft's LoRA wraps transformers models; the builtin model takes atk's own adapters (and here, where peft
    # is not installed, importing it would fail the step's set-up).
    monkeypatch.setattr(lora_lib, "peft_available", lambda: True)
    t = trainer({"lora": {"rank": 2}})
    assert not hasattr(t.policy.module, "peft_config")
    assert sum(isinstance(m, lora_lib.LoRALinear) for m in t.policy.module.modules()) == 2 * 7  # layers x targets
    t.step(sft_batch())


def test_lora_layers_to_transform_adapts_those_layers_only_and_backward_stops_above_the_rest(tmp_path):
    t = trainer({"lora": {"rank": 2, "layers_to_transform": [1]}})
    adapted = sorted(n for n, m in t.policy.module.named_modules() if isinstance(m, lora_lib.LoRALinear))
    assert len(adapted) == 7 and all(".layers.1." in n for n in adapted)
    reached = []  # layer 0 runs forward, but nothing below layer 1 needs a gradient
    layer0 = t.policy.module.model.layers[0]
    layer0.register_full_backward_hook(lambda *_: reached.append(0))
    layer1 = t.policy.module.model.layers[1]
    layer1.register_full_backward_hook(lambda *_: reached.append(1))
    loss = t.step(sft_batch())["loss"]
    assert math.isfinite(loss) and reached and set(reached) == {1}
    t.save(str(tmp_path / "ckpt"))
    config = json.load(open(tmp_path / "ckpt" / "adapter_config.json"))
    assert config["layers_to_transform"] == [1]


def shifted_behaviour(batch, shift):
    """The batch with each trained token's behaviour logprob moved by shift(advantage)
    (a stale or mismatched engine)."""
    for s in batch["sequences"]:
        s["logprobs"] = [lp + shift(s["advantage"]) * m for lp, m in zip(s["logprobs"], s["loss_mask"])]
    return batch


def test_step_with_tis_caps_the_weight_against_the_behaviour_policy():
    t = trainer({"tis_cap": 1.5})
    # The engine found every token exp(0.2) less likely than the trainer does: inside the trust region.
    metrics = t.step(shifted_behaviour(pg_batch(t.policy, FIXED_SEQUENCES), lambda a: -0.2))
    assert metrics["clip_fraction"] == 0.0
    assert metrics["tis_weight_mean"] == pytest.approx(math.exp(0.2), rel=1e-4)
    t = trainer({"tis_cap": 1.1})
    metrics = t.step(shifted_behaviour(pg_batch(t.policy, FIXED_SEQUENCES), lambda a: -0.2))
    assert metrics["tis_weight_mean"] == pytest.approx(1.1)  # exp(0.2) = 1.22, capped


def test_step_with_tis_gives_no_gradient_outside_the_trust_region_around_the_behaviour_policy():
    # Stale rollouts: since the engine sampled, the trainer's policy already raised every positive-advantage
    # token by more than 1 + clip_high (exp(0.5) = 1.65) and lowered every negative-advantage one below
    # 1 - clip_low (exp(-0.5) = 0.61). PPO clips all of them: nothing may move. (Taking the ratio only
    # against the trainer's own pre-update logprobs, it is 1 and the update went on pushing them.)
    t = trainer({"tis_cap": 2.0})
    before = params(t)
    metrics = t.step(shifted_behaviour(pg_batch(t.policy, FIXED_SEQUENCES), lambda a: -0.5 if a > 0 else 0.5))
    assert metrics["clip_fraction"] == 1.0
    assert all(torch.equal(x, y) for x, y in zip(params(t), before))
    # The same batch on-policy moves the weights: the mask, not a dead batch, stopped them.
    t = trainer({"tis_cap": 2.0})
    t.step(pg_batch(t.policy, FIXED_SEQUENCES))
    assert not all(torch.equal(x, y) for x, y in zip(params(t), before))


def test_step_with_a_mismatch_correction_keeps_no_trust_region_at_the_engine_unless_asked():
    # The batch of the test above: with trust_region unset the correction is TIS alone (as its paper writes it),
    # so the tokens move; with trust_region true PPO's clip against the engine's logprobs stops them.
    shifted = lambda t: shifted_behaviour(  # noqa: E731
        pg_batch(t.policy, FIXED_SEQUENCES), lambda a: -0.5 if a > 0 else 0.5
    )
    t = trainer({"mismatch": {"mode": "tis", "high": 2.0}})
    before = params(t)
    metrics = t.step(shifted(t))
    assert metrics["clip_fraction"] == 0.0
    assert not all(torch.equal(x, y) for x, y in zip(params(t), before))
    t = trainer({"mismatch": {"mode": "tis", "high": 2.0, "trust_region": True}})
    assert t.step(shifted(t))["clip_fraction"] == 1.0
    assert all(torch.equal(x, y) for x, y in zip(params(t), before))


def test_step_with_masked_tokens_drop_trains_as_if_the_rejected_tokens_were_never_trained():
    # Every sequence's first trained token is found e^1.5 times likelier by the trainer than by the engine (rejected,
    # outside [0.5, 2]), the rest e^0.3 (kept, weight e^0.3). Dropping the rejected tokens from the counts must give
    # the update of the same batch with those tokens' loss mask 0, for each aggregation.
    def batch(t, unmask_rejected):
        b = pg_batch(t.policy, FIXED_SEQUENCES)
        for s in b["sequences"]:
            first = s["loss_mask"].index(1)
            gaps = [(1.5 if i == first else 0.3) * m for i, m in enumerate(s["loss_mask"])]
            s["logprobs"] = [lp - g for lp, g in zip(s["logprobs"], gaps)]
            if unmask_rejected:
                s["loss_mask"][first] = 0
                s["logprobs"][first] = 0.0
        return b

    for aggregation in ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "token-sum"):
        mismatch = {"mode": "mask", "low": 0.5, "high": 2.0}
        dropped = trainer({"mismatch": {**mismatch, "masked_tokens": "drop"}, "loss_aggregation": aggregation})
        metrics = dropped.step(batch(dropped, False))
        assert metrics["mismatch_masked_fraction"] == pytest.approx(5 / 18)
        reference = trainer({"mismatch": mismatch, "loss_aggregation": aggregation})
        expected = reference.step(batch(reference, True))
        assert metrics["loss"] == pytest.approx(expected["loss"], rel=1e-5, abs=1e-8)
        for x, y in zip(params(dropped), params(reference)):
            assert torch.allclose(x, y, rtol=0, atol=1e-6)
        counted = trainer({"mismatch": mismatch, "loss_aggregation": aggregation})
        # kept in the count, the same tokens weigh less where the count divides (every sequence keeps a token, so
        # the sequence count is the same either way)
        if aggregation in ("token-mean", "seq-mean-token-mean"):
            assert counted.step(batch(counted, False))["loss"] != pytest.approx(expected["loss"], rel=1e-3)


def test_step_with_reinforce_logs_minus_the_advantage_times_the_log_likelihood():
    t = trainer({"policy_loss": "reinforce"})
    batch = pg_batch(t.policy, FIXED_SEQUENCES)
    want = sum(
        -s["advantage"] * lp for s in batch["sequences"] for lp, m in zip(s["logprobs"], s["loss_mask"]) if m
    ) / sum(sum(s["loss_mask"]) for s in batch["sequences"])
    metrics = t.step(batch)
    assert metrics["loss"] == pytest.approx(want, rel=1e-5)
    assert metrics["clip_fraction"] == 0.0


@pytest.mark.parametrize("checkpointing", [False, True])
def test_step_returns_kl_zero_at_the_reference_and_positive_after_updates(checkpointing):
    # With gradient checkpointing the reference is a deepcopy of checkpointed layers: it must run its own
    # frozen weights, not the trained ones (a closure over the original layers did, and KL stayed 0).
    for lora in (None, {"rank": 4}):
        t = trainer({"kl_coef": 0.1, "lora": lora, "learning_rate": 5e-2, "gradient_checkpointing": checkpointing})
        batch = pg_batch(t.policy, FIXED_SEQUENCES)
        assert t.step(batch)["kl"] == pytest.approx(0.0, abs=1e-7)
        for _ in range(3):
            kl = t.step(batch)["kl"]
        assert kl > 1e-4


def test_step_with_gradient_checkpointing_returns_the_same_update():
    plain, checkpointed = trainer(), trainer({"gradient_checkpointing": True})
    batch = pg_batch(plain.policy, FIXED_SEQUENCES)
    assert checkpointed.step(batch)["loss"] == pytest.approx(plain.step(batch)["loss"], abs=1e-7)
    assert all(torch.allclose(x, y, atol=1e-7) for x, y in zip(params(plain), params(checkpointed)))


def test_a_deepcopy_of_a_checkpointed_model_runs_and_trains_its_own_weights():
    t = trainer({"gradient_checkpointing": True})
    copy_ = copy.deepcopy(t.policy.module)
    ids = torch.tensor([[1, 2, 3, 4]])
    before = copy_(ids).detach()
    with torch.no_grad():
        for p in t.policy.module.parameters():
            p.add_(0.5)
    assert torch.equal(copy_(ids).detach(), before)
    copy_(ids).sum().backward()
    assert all(p.grad is not None for p in copy_.parameters()) and all(
        p.grad is None for p in t.policy.module.parameters()
    )


def test_step_refuses_a_token_id_outside_the_vocabulary():
    t = trainer()
    batch = pg_batch(t.policy, FIXED_SEQUENCES)
    ids = batch["sequences"][1]["token_ids"] = list(batch["sequences"][1]["token_ids"])  # not FIXED_SEQUENCES' own list
    ids[2] = 32  # vocab_size 32
    with pytest.raises(BatchError, match=r"token id 32 is outside the model's vocabulary \(vocab_size 32\)"):
        t.step(batch)
    assert t.policy_version == 0


def test_step_with_several_updates_moves_further():
    # lr small enough that the ratio stays inside the clip range: at 1e-2 a fifth of the tokens are
    # clipped after the first update and stop pulling, so later updates add less.
    once, twice = trainer({"learning_rate": 1e-3}), trainer({"learning_rate": 1e-3, "updates_per_step": 3})
    batch = pg_batch(once.policy, FIXED_SEQUENCES)
    start = params(once)
    once.step(batch), twice.step(batch)
    moved = lambda t: sum(float((x - y).abs().sum()) for x, y in zip(params(t), start))  # noqa: E731
    assert moved(twice) > 2 * moved(once)
    assert twice.policy_version == 1


def test_lr_factor_returns_warmup_then_cosine():
    config = parse_config({"lr_schedule": "cosine", "warmup_steps": 3, "total_steps": 7})
    assert [round(lr_factor(s, config), 4) for s in range(9)] == [0.25, 0.5, 0.75, 1.0, 0.8536, 0.5, 0.1464, 0.0, 0.0]
