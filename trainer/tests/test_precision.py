"""Weights in the dtype they need: what is chosen per device and mode (CUDA only; CPU unchanged), the
frozen LoRA base in bf16, bf16 weights with a float32 AdamW and stochastic rounding, and the engine's
bf16 serving copy refreshed from float32 masters."""
import pytest
import torch

from atk_trainer.serve.serving_copy import ServingCopy, serving_dtype
from atk_trainer.train import lora as lora_lib
from atk_trainer.train import precision
from atk_trainer.train.config import LoraConfig, parse_config
from atk_trainer.train.train import Trainer
from tiny import FIXED_SEQUENCES, pg_batch, tiny_policy

CPU, CUDA = torch.device("cpu"), torch.device("cuda")


def test_dtypes_change_only_on_cuda_under_autocast():
    assert precision.frozen_base_dtype(CUDA, autocast=True, lora=True) == torch.bfloat16
    assert precision.frozen_base_dtype(CPU, autocast=False, lora=True) is None
    assert precision.frozen_base_dtype(CUDA, autocast=False, lora=True) is None  # dtype float32 forced
    assert precision.frozen_base_dtype(CUDA, autocast=True, lora=False) is None
    assert precision.full_weights_dtype(CUDA, True, False, "bfloat16") == torch.bfloat16
    assert precision.full_weights_dtype(CPU, False, False, "float32") is None
    with pytest.raises(ValueError, match="^weights_dtype: bfloat16 needs a CUDA device"):
        precision.full_weights_dtype(CPU, False, False, "bfloat16")
    with pytest.raises(ValueError, match="^weights_dtype: bfloat16 is for full fine-tuning"):
        precision.full_weights_dtype(CUDA, True, True, "bfloat16")
    assert serving_dtype(CUDA, True, lora=False, sharded=False, weights_dtype="float32") == torch.bfloat16
    assert serving_dtype(CPU, False, lora=False, sharded=False, weights_dtype="float32") is None
    assert serving_dtype(CUDA, True, lora=True, sharded=False, weights_dtype="float32") is None
    assert serving_dtype(CUDA, True, lora=False, sharded=False, weights_dtype="bfloat16") is None


def test_cpu_training_keeps_float32_everywhere_and_rejects_bf16_weights():
    trainer = Trainer(tiny_policy(), parse_config({"lora": {"rank": 4}}))
    assert {p.dtype for p in trainer.policy.module.parameters()} == {torch.float32}
    assert isinstance(trainer.optimizer, torch.optim.AdamW)
    with pytest.raises(ValueError, match="^weights_dtype: bfloat16 needs a CUDA device"):
        Trainer(tiny_policy(), parse_config({"weights_dtype": "bfloat16"}))


def test_cast_frozen_leaves_the_adapters_float32_and_keeps_ties():
    policy = tiny_policy()
    module = lora_lib.apply_lora(policy.module, LoraConfig(rank=4), use_peft=False)
    assert precision.cast_frozen(module, torch.bfloat16) > 0
    trainable = {p.dtype for p in module.parameters() if p.requires_grad}
    frozen = {p.dtype for p in module.parameters() if not p.requires_grad}
    assert trainable == {torch.float32} and frozen == {torch.bfloat16}
    assert module.lm_head.weight is module.model.embed_tokens.weight


def test_stochastic_rounding_keeps_updates_below_bf16_resolution_in_expectation():
    x = torch.full((100000,), 1.0 + 2**-10)  # between the bf16 neighbours 1 and 1 + 2^-7
    rounded = precision.stochastic_round_to_bf16(x, torch.Generator().manual_seed(0)).float()
    assert set(rounded.unique().tolist()) == {1.0, 1.0 + 2**-7}
    assert rounded.mean().item() == pytest.approx(1.0 + 2**-10, abs=2e-5)
    assert x.to(torch.bfloat16).float().unique().tolist() == [1.0]  # round-to-nearest loses it


def test_bf16_adamw_tracks_float32_adamw():
    torch.manual_seed(0)
    w32 = torch.nn.Parameter(torch.randn(64, 64))
    w16 = torch.nn.Parameter(w32.detach().to(torch.bfloat16))
    target = torch.randn(64, 64)
    initial = ((w32.detach() - target) ** 2).mean().item()
    reference = torch.optim.AdamW([w32], lr=1e-3, weight_decay=0.01)
    ours = precision.Bf16AdamW([w16], lr=1e-3, weight_decay=0.01)
    for _ in range(50):
        for w, opt in ((w32, reference), (w16, ours)):
            opt.zero_grad()
            ((w.float() - target) ** 2).mean().backward()
            opt.step()
    assert w16.dtype == torch.bfloat16 and ours.state[w16]["exp_avg"].dtype == torch.float32
    gap = (w16.float() - w32.detach()).abs()
    assert gap.mean() < 1e-2  # bf16's resolution is 2^-8 relative: ~4e-3 at |w| ~ 1
    loss16, loss32 = ((w16.float() - target) ** 2).mean().item(), ((w32.detach() - target) ** 2).mean().item()
    assert loss16 == pytest.approx(loss32, rel=0.02)
    assert loss16 < 0.95 * initial  # it learns


def test_serving_copy_is_bf16_and_follows_the_master_after_refresh():
    trainer = Trainer(tiny_policy(), parse_config({"learning_rate": 1e-2}))
    serving = ServingCopy(trainer.policy, torch.bfloat16)
    assert {p.dtype for p in serving.policy.module.parameters()} == {torch.bfloat16}
    assert not any(p.requires_grad for p in serving.policy.module.parameters())
    before = serving.policy.module.model.norm.weight.clone()
    trainer.step(pg_batch(trainer.policy, FIXED_SEQUENCES))
    assert torch.equal(serving.policy.module.model.norm.weight, before)  # a copy, not a view
    serving.refresh()
    for served, master in zip(serving.policy.module.parameters(), trainer.policy.module.parameters()):
        assert torch.equal(served, master.detach().to(torch.bfloat16))


def test_lora_step_trains_float32_adapters_over_a_bf16_base_under_autocast(cuda_autocast_on_cpu):
    trainer = Trainer(tiny_policy(), parse_config({"learning_rate": 1e-2, "lora": {"rank": 4, "alpha": 8}}))
    precision.cast_frozen(trainer.policy.module, torch.bfloat16)  # what a CUDA policy gets at init
    trainer.autocast = True
    adapters = [p.detach().clone() for p in trainer.params]
    metrics = trainer.step(pg_batch(tiny_policy(), FIXED_SEQUENCES))
    assert all(torch.isfinite(torch.tensor(v)) for v in metrics.values())
    assert {p.dtype for p in trainer.params} == {torch.float32}
    assert any(not torch.equal(a, p) for a, p in zip(adapters, trainer.params))  # the adapters moved
