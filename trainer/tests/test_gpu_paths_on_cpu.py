"""What this CPU machine can show of the GPU path: the bf16 autocast code of the trainer and the
engine run under CPU autocast (torch.autocast's "cuda" redirected to "cpu"), and the fallbacks taken
when transformers and peft are not installed. Only a CUDA run can show CUDA kernels, bf16 matmul
precision on the GPU, peft's LoRA and transformers' gradient checkpointing."""
import json

import pytest
import torch

from atk_trainer.train import lora as lora_lib
from atk_trainer.model import modeling
from atk_trainer.train.config import parse_config
from atk_trainer.serve.engine import Engine
from atk_trainer.serve.sampling_params import SamplingParams
from atk_trainer.train.loss import token_logprobs
from atk_trainer.train.train import Trainer
from tiny import FIXED_SEQUENCES, TINY_CONFIG, pg_batch, tiny_policy


def test_trainer_turns_autocast_on_only_for_cuda_unless_float32_is_forced():
    for dtype in ("auto", "bfloat16", "float32"):
        assert Trainer(tiny_policy(), parse_config({"dtype": dtype})).autocast is False  # CPU policy: never


def test_step_under_bf16_autocast_keeps_float32_weights_and_returns_the_float32_loss(cuda_autocast_on_cpu):
    plain = Trainer(tiny_policy(), parse_config({"learning_rate": 1e-2}))
    mixed = Trainer(tiny_policy(), parse_config({"learning_rate": 1e-2}))
    mixed.autocast = True  # what a CUDA policy with dtype auto gets
    batch = pg_batch(plain.policy, FIXED_SEQUENCES)
    dtypes = []
    mixed.policy.module.lm_head.register_forward_hook(lambda module, inputs, out: dtypes.append(out.dtype))
    a, b = plain.step(batch), mixed.step(batch)
    assert set(dtypes) == {torch.bfloat16}  # the forward really ran in bf16
    assert {p.dtype for p in mixed.policy.module.parameters()} == {torch.float32}  # master weights stay fp32
    assert all(torch.isfinite(torch.tensor(v)) for v in b.values())
    # bf16 keeps ~3 significant digits: the loss and the engine/trainer gap move by that much, no more.
    assert b["loss"] == pytest.approx(a["loss"], abs=2e-2)
    assert a["mismatch_max"] < 1e-5 < b["mismatch_max"] < 5e-2
    assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=5e-2)


def test_engine_under_bf16_autocast_returns_greedy_full_forward_tokens_and_close_logprobs(cuda_autocast_on_cpu):
    policy = tiny_policy(2)
    engine = Engine()
    engine.set_policy(policy, autocast=True)
    engine.start()
    try:
        prompt = [1, 2, 3]
        (c,) = engine.generate(prompt, SamplingParams(max_tokens=8, temperature=0, ignore_eos=True))
        ids = list(prompt)
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            for _ in range(8):
                ids.append(int(policy.logits(torch.tensor([ids]))[0, -1].argmax()))
            bf16 = token_logprobs(policy.logits(torch.tensor([ids])), torch.tensor([ids]))[0, len(prompt) :]
        assert c.token_ids == ids[len(prompt) :]
        with torch.no_grad():
            fp32 = token_logprobs(policy.logits(torch.tensor([ids])), torch.tensor([ids]))[0, len(prompt) :]
        # KV-cache decoding in bf16 vs a bf16 full forward: different op order, same precision class.
        assert max(abs(x - y) for x, y in zip(c.logprobs, bf16.tolist())) < 5e-2
        assert max(abs(x - y) for x, y in zip(c.logprobs, fp32.tolist())) < 5e-2
    finally:
        engine.close()


def test_backend_auto_is_builtin_and_lora_is_builtin_without_transformers_and_peft(tmp_path):
    if modeling.transformers_available() or lora_lib.peft_available():
        pytest.skip("transformers or peft is installed: the fallbacks are not taken here")
    (tmp_path / "config.json").write_text(json.dumps(TINY_CONFIG))
    assert modeling.load_policy(str(tmp_path), backend="auto", init="random").backend == "builtin"
    with pytest.raises(ImportError, match="backend 'transformers' needs the transformers package"):
        modeling.load_policy(str(tmp_path), backend="transformers", init="random")
    t = Trainer(tiny_policy(), parse_config({"lora": {"rank": 2}}))
    assert not hasattr(t.policy.module, "peft_config")
    # layers x target modules
    assert sum(isinstance(m, lora_lib.LoRALinear) for m in t.policy.module.modules()) == 2 * 7
