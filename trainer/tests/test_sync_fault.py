"""The deliberately broken weight syncs (ATK_SYNC_FAULT) the sync probe's tests plant: each breaks what it says."""
import pytest
import torch

from atk_trainer.model.safetensors_io import load_file
from atk_trainer.serve.engine import Engine
from atk_trainer.serve.sampling_params import SamplingParams
from atk_trainer.train import sync_fault
from atk_trainer.train.config import parse_config
from atk_trainer.train.train import Trainer
from tiny import FIXED_SEQUENCES, pg_batch, tiny_policy


def trained(monkeypatch, fault, lora=None):
    if fault:
        monkeypatch.setenv(sync_fault.FAULT_ENV, fault)
    policy = tiny_policy()
    config = {"learning_rate": 0.05, **({"lora": lora} if lora else {})}
    trainer = Trainer(policy, parse_config(config))
    before = {n: t.clone() for n, t in policy.module.state_dict().items()}
    trainer.step(pg_batch(policy, FIXED_SEQUENCES))
    return trainer, before


def changed(saved, before):
    return sorted(n for n, t in saved.items() if not torch.equal(t, before[n]))


def test_skip_layer_writes_decoder_layer_0_as_loaded_and_the_rest_as_trained(monkeypatch, tmp_path):
    trainer, before = trained(monkeypatch, "skip_layer")
    trainer.save(str(tmp_path / "sync"), weights_only=True)
    saved = load_file(str(tmp_path / "sync" / "model.safetensors"))
    assert changed(saved, before) and all(".layers.0." not in n for n in changed(saved, before))
    assert all(torch.equal(saved[n], before[n]) for n in saved if ".layers.0." in n)
    # A checkpoint to resume from keeps every trained weight.
    trainer.save(str(tmp_path / "ckpt"))
    assert any(".layers.0." in n for n in changed(load_file(str(tmp_path / "ckpt" / "model.safetensors")), before))


def test_without_a_fault_every_trained_tensor_is_written(monkeypatch, tmp_path):
    trainer, before = trained(monkeypatch, None)
    trainer.save(str(tmp_path / "sync"), weights_only=True)
    assert any(".layers.0." in n for n in changed(load_file(str(tmp_path / "sync" / "model.safetensors")), before))


def test_lora_noop_writes_an_adapter_whose_b_tensors_are_zero(monkeypatch, tmp_path):
    lora = {"rank": 4, "alpha": 8}
    for fault, zero in ((None, False), ("lora_noop", True)):
        trainer, _ = trained(monkeypatch, fault, lora)
        trainer.save(str(tmp_path / str(fault)), weights_only=True)
        tensors = load_file(str(tmp_path / str(fault) / "adapter_model.safetensors"))
        b = [t for n, t in tensors.items() if ".lora_B." in n]
        assert b and all(bool((t == 0).all()) == zero for t in b)


def test_an_unknown_fault_is_refused(monkeypatch):
    monkeypatch.setenv(sync_fault.FAULT_ENV, "skip_everything")
    with pytest.raises(ValueError, match="is not a sync fault"):
        sync_fault.sync_fault()


@pytest.mark.parametrize("fault, reused", [(None, 0), ("keep_prefix_cache", 11)])
def test_keep_prefix_cache_keeps_the_old_weights_keys_and_values_across_a_weight_change(monkeypatch, fault, reused):
    if fault:
        monkeypatch.setenv(sync_fault.FAULT_ENV, fault)
    policy = tiny_policy()
    engine = Engine(max_batch=4, prefix_cache_tokens=1024).start()
    try:
        with engine.exclusive():
            engine.set_policy(policy)
        prompt = list(range(1, 13))
        greedy = SamplingParams(max_tokens=1, temperature=0.0, top_p=1.0, top_k=-1, logprobs=0)
        engine.generate(prompt, greedy)
        with engine.exclusive(), torch.no_grad():  # a weight change, as a train step makes
            for p in policy.module.parameters():
                p.add_(0.01)
        (again,) = engine.generate(prompt, greedy)
        assert again.cached_tokens == reused
    finally:
        engine.close()
