"""The memory and speed knobs: micro_batch_tokens chosen when unset, torch.compile refused where torch
lacks it, and an out-of-memory error that names the knob to turn down instead of a CUDA traceback."""
import functools
import json
import os

import pytest
import torch

from atk_trainer.serve.control import ControlApi
from atk_trainer.serve.engine_api import EngineApi
from atk_trainer.serve.engine import Engine
from atk_trainer.errors import HttpError
from atk_trainer.train import memory
from atk_trainer.train.config import ConfigError, parse_config
from atk_trainer.train.train import Trainer
from tiny import FIXED_SEQUENCES, TINY_CONFIG, pg_batch, tiny_policy

QWEN_05B = {
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
}
GIB = 1 << 30


def test_auto_micro_batch_tokens_grows_with_free_memory_and_checkpointing_within_bounds():
    sizes = [memory.auto_micro_batch_tokens(free * GIB, QWEN_05B, False) for free in (1, 10, 20, 40)]
    assert sizes == sorted(sizes) and sizes[0] == memory.MIN_AUTO_TOKENS and sizes[-1] > sizes[1] > sizes[0]
    assert all(s % 1024 == 0 for s in sizes)
    assert memory.auto_micro_batch_tokens(20 * GIB, QWEN_05B, True) > 4 * sizes[2]  # one layer's activations live
    assert memory.auto_micro_batch_tokens(10_000 * GIB, QWEN_05B, True) == memory.MAX_AUTO_TOKENS
    assert memory.auto_micro_batch_tokens(-5, QWEN_05B, False) == memory.MIN_AUTO_TOKENS  # less free than reserved


def test_unset_micro_batch_tokens_on_cpu_is_sized_from_available_memory_and_a_given_value_is_kept(monkeypatch):
    assert parse_config({}).micro_batch_tokens is None
    monkeypatch.setattr(memory, "cpu_available_bytes", lambda: 4 * GIB)
    policy = tiny_policy()
    optimizer_bytes = 12 * sum(p.numel() for p in policy.module.parameters())
    expected = memory.auto_micro_batch_tokens(4 * GIB - optimizer_bytes, policy.config, False, compute_bytes=4)
    assert Trainer(policy, parse_config({})).micro_batch_tokens == expected == memory.MAX_AUTO_TOKENS  # a tiny model
    # fp32 activations of a 0.5B model: fewer tokens than the old fixed 8192 in 16 GB, more in 64 GB.
    sizes = [memory.auto_micro_batch_tokens(free * GIB, QWEN_05B, False, compute_bytes=4) for free in (16, 64)]
    assert sizes[0] < memory.CPU_MICRO_BATCH_TOKENS < sizes[1]
    monkeypatch.setattr(memory, "cpu_available_bytes", lambda: None)  # not Linux: the fixed size
    assert Trainer(tiny_policy(), parse_config({})).micro_batch_tokens == memory.CPU_MICRO_BATCH_TOKENS
    assert Trainer(tiny_policy(), parse_config({"micro_batch_tokens": 300})).micro_batch_tokens == 300


@pytest.mark.parametrize("lora", [None, {"rank": 2}])
def test_unset_micro_batch_tokens_reserves_what_the_first_step_allocates_for_gradients_and_adamw(monkeypatch, lora):
    # The reserve is 12 bytes a trainable parameter: its fp32 gradient and AdamW's two fp32 moments, each
    # checked here against the tensors a real step allocates.
    monkeypatch.setattr(memory, "cpu_available_bytes", lambda: 4 * GIB)
    sized = []
    auto = memory.auto_micro_batch_tokens

    def sizing(free, *args, **kwargs):
        sized.append(free)
        return auto(free, *args, **kwargs)

    monkeypatch.setattr(memory, "auto_micro_batch_tokens", sizing)
    t = Trainer(tiny_policy(), parse_config({"lora": lora}))
    assert len(sized) == 1
    gradients = []
    step = t.optimizer.step

    @functools.wraps(step)  # keeps the LR scheduler's mark on the step it wrapped
    def spy(*args, **kwargs):
        gradients.extend(p.grad for p in t.params)
        return step(*args, **kwargs)

    t.optimizer.step = spy
    t.step(pg_batch(t.policy, FIXED_SEQUENCES))
    moments = [s[k] for s in t.optimizer.state.values() for k in ("exp_avg", "exp_avg_sq")]
    allocated = sum(x.numel() * x.element_size() for x in gradients + moments)
    assert 4 * GIB - sized[0] == allocated
    if lora is not None:  # the adapters alone train: far less than the whole model would reserve
        assert allocated < 12 * sum(p.numel() for p in t.policy.module.parameters()) / 2


SMOLLM2_135M = {
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
}


def test_unset_micro_batch_tokens_on_cpu_stops_at_half_a_gibibyte_of_activations(monkeypatch):
    monkeypatch.setattr(memory, "cpu_available_bytes", lambda: 16 * GIB)
    cpu = torch.device("cpu")
    # SmolLM2-135M: ~1.34 MB of fp32 activations a position; from 16 GB free alone it would take 7168
    assert memory.auto_micro_batch_tokens(16 * GIB, SMOLLM2_135M, False, compute_bytes=4) == 7168
    assert memory.resolve_micro_batch_tokens(None, cpu, SMOLLM2_135M, False) == memory.CPU_MIN_TOKENS == 256
    # with checkpointing a position keeps one layer's activations: the bound allows more
    assert memory.resolve_micro_batch_tokens(None, cpu, SMOLLM2_135M, True) == 4608
    # the tiny model's 16384-token micro-batches (faster than 8192 on CPU) stay within it
    assert memory.resolve_micro_batch_tokens(None, cpu, TINY_CONFIG, False) == memory.MAX_AUTO_TOKENS
    monkeypatch.setattr(memory, "cpu_available_bytes", lambda: GIB // 2)  # less free memory than the bound: it decides
    assert memory.resolve_micro_batch_tokens(None, cpu, QWEN_05B, False) == memory.CPU_MIN_TOKENS
    assert memory.resolve_micro_batch_tokens(4096, cpu, SMOLLM2_135M, False) == 4096  # a given value is kept


def test_cpu_available_bytes_reads_this_machines_memory():
    available = memory.cpu_available_bytes()
    assert available is not None and 0 < available <= os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    with pytest.raises(ConfigError, match="micro_batch_tokens: must be > 0"):
        parse_config({"micro_batch_tokens": 0})


@pytest.mark.skipif(hasattr(torch.nn.Module, "compile"), reason="this torch can compile: the refusal is for older ones")
def test_compile_is_refused_with_the_torch_it_needs():
    with pytest.raises(ValueError, match=r"^compile: needs torch >= 2.2 \(nn.Module.compile\); this is torch "):
        Trainer(tiny_policy(), parse_config({"compile": True}))


def cuda_oom(*_args, **_kwargs):
    # What the CUDA caching allocator raises (torch.cuda.OutOfMemoryError where torch has it).
    error = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)
    raise error("CUDA out of memory. Tried to allocate 4.64 GiB (GPU 0; 79.11 GiB total capacity)")


def test_out_of_memory_in_a_micro_batch_names_the_knob_and_its_shape(monkeypatch):
    trainer = Trainer(tiny_policy(), parse_config({"micro_batch_tokens": 16}))
    before = [p.detach().clone() for p in trainer.policy.module.parameters()]
    monkeypatch.setattr(Trainer, "_forward_backward", cuda_oom)
    with pytest.raises(memory.TrainerOutOfMemory) as caught:
        trainer.step(pg_batch(trainer.policy, FIXED_SEQUENCES))
    assert str(caught.value) == (
        "out of GPU memory in train_step at a micro-batch of 2 x 8 tokens: "
        "lower algorithm.micro_batch_tokens (now 16), "
        "or set model.trainer.gradient_checkpointing: true, or train a LoRA adapter (algorithm.lora)"
    )
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.policy.module.parameters()))  # nothing applied
    assert trainer.step_count == 0


def test_out_of_memory_in_the_optimizer_names_the_knob_and_other_errors_pass_through(monkeypatch):
    trainer = Trainer(tiny_policy(), parse_config({"micro_batch_tokens": 8192}))
    monkeypatch.setattr(trainer.optimizer, "step", cuda_oom)
    with pytest.raises(
        memory.TrainerOutOfMemory,
        match=r"^out of GPU memory in train_step: lower algorithm.micro_batch_tokens \(now 8192\)",
    ):
        trainer.step(pg_batch(trainer.policy, FIXED_SEQUENCES))
    monkeypatch.setattr(trainer.optimizer, "step", lambda: (_ for _ in ()).throw(RuntimeError("some other failure")))
    with pytest.raises(RuntimeError, match="^some other failure$"):
        trainer.step(pg_batch(trainer.policy, FIXED_SEQUENCES))


def test_control_answers_an_out_of_memory_step_with_507_and_the_message(tmp_path, monkeypatch):
    (tmp_path / "config.json").write_text(json.dumps(TINY_CONFIG))
    engine = Engine()
    control = ControlApi(engine, EngineApi(engine))
    loaded = control.load_model(
        {"path": str(tmp_path), "init": "random", "device": "cpu", "train": {"micro_batch_tokens": 64}}
    )
    assert loaded["micro_batch_tokens"] == 64
    monkeypatch.setattr(Trainer, "_forward_backward", cuda_oom)
    with pytest.raises(HttpError) as caught:
        control.train_step(pg_batch(control.trainer.policy, FIXED_SEQUENCES))
    assert (caught.value.status, caught.value.kind) == (507, "OutOfMemoryError")
    assert caught.value.message.startswith("out of GPU memory in train_step at a micro-batch of ")
    engine.close()
