"""The built-in architectures against transformers' own: the same logits within 1e-5 in float32 for a forward
pass and for the embedded engine's decode steps (dynamic and static), and checkpoints that each side writes
in the Hugging Face layout, under the original key names, and the other loads.

transformers needs torch >= 2 (Debian's is 1.13), so these skip where it is missing; `npm run test:transformers`
makes a venv with the pinned versions (scripts/test-transformers.mjs) and runs them there."""
import json

import pytest
import torch

transformers = pytest.importorskip(
    "transformers", reason="transformers is not installed here; npm run test:transformers runs these in a venv with it"
)

from atk_trainer.model.modeling import load_policy, random_policy  # noqa: E402
from atk_trainer.model.safetensors_io import load_file  # noqa: E402
from atk_trainer.serve.decoders import BuiltinDecoder  # noqa: E402
from atk_trainer.serve.static_decode import StaticDecodeStep  # noqa: E402
from test_decoder import GQA_UNTIED, LLAMA, LLAMA_BIASED, MISTRAL, MHA_TIED, QWEN3, SLIDING, perturbed  # noqa: E402

# Weights of std 0.2, not 0.02: attention far from uniform, so a rope or mask difference moves the logits.
CONFIGS = {
    "qwen2": GQA_UNTIED,
    "qwen2-tied": MHA_TIED,
    "qwen2-sliding": SLIDING,
    "qwen3": QWEN3,
    "llama": LLAMA,
    "llama-biased": LLAMA_BIASED,
    "mistral": MISTRAL,
}
CONFIGS = {name: {**cfg, "initializer_range": 0.2} for name, cfg in CONFIGS.items()}
ARCHS = pytest.mark.parametrize("cfg", list(CONFIGS.values()), ids=list(CONFIGS))
IDS = [[5, 0, 39, 7, 7, 12, 1, 30, 2, 17, 3, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]]
TOLERANCE = 1e-5


def skip_unless_transformers_has(model_type):
    if model_type not in transformers.models.auto.configuration_auto.CONFIG_MAPPING:
        pytest.skip(f"transformers {transformers.__version__} has no {model_type} (qwen3 came in 4.51)")


def hf_model(cfg):
    skip_unless_transformers_has(cfg["model_type"])
    config = transformers.AutoConfig.for_model(**cfg)
    config._attn_implementation = "eager"
    return transformers.AutoModelForCausalLM.from_config(config, torch_dtype=torch.float32).eval()


def hf_logits(module, ids):
    with torch.no_grad():
        return module(input_ids=torch.tensor(ids), use_cache=False).logits  # (B, T, V)


@ARCHS
def test_builtin_forward_returns_the_transformers_logits(cfg):
    builtin = perturbed(random_policy(cfg, seed=3))
    hf = hf_model(cfg)
    hf.load_state_dict(builtin.module.state_dict(), strict=not cfg.get("tie_word_embeddings"))
    with torch.no_grad():
        ours = builtin.logits(torch.tensor(IDS))
    theirs = hf_logits(hf, IDS)
    assert ours.abs().max() > 1  # logits big enough that 1e-5 is a real bound
    assert (ours - theirs).abs().max().item() < TOLERANCE


@ARCHS
@pytest.mark.parametrize("static", [False, True], ids=["dynamic-step", "static-step"])
def test_builtin_decode_steps_return_the_transformers_logits(cfg, static):
    builtin = perturbed(random_policy(cfg, seed=4))
    hf = hf_model(cfg)
    hf.load_state_dict(builtin.module.state_dict(), strict=not cfg.get("tie_word_embeddings"))
    prompts = [[5, 0, 39, 7], [1, 2], [30, 31, 32, 33, 34, 35]]
    seqs = [list(p) for p in prompts]
    with torch.no_grad():
        decoder = BuiltinDecoder(builtin.module, StaticDecodeStep(builtin.module) if static else None)
        logits = decoder.prefill(prompts, 8)  # (B, V) the next-token logits of each row
        for _ in range(6):
            for seq, row in zip(seqs, logits):
                want = hf_logits(hf, [seq])[0, -1]
                assert (row - want).abs().max().item() < TOLERANCE
            tokens = [int(t) for t in logits.argmax(-1)]
            for seq, t in zip(seqs, tokens):
                seq.append(t)
            logits = decoder.decode(tokens)


@ARCHS
def test_checkpoints_written_by_either_side_load_in_the_other(cfg, tmp_path):
    skip_unless_transformers_has(cfg["model_type"])
    builtin = perturbed(random_policy(cfg, seed=5))
    builtin.save_pretrained(str(tmp_path / "ours"))
    theirs = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path / "ours"), torch_dtype=torch.float32)
    with torch.no_grad():
        want = builtin.logits(torch.tensor(IDS))
    assert (hf_logits(theirs.eval(), IDS) - want).abs().max().item() < TOLERANCE

    theirs.save_pretrained(str(tmp_path / "theirs"), safe_serialization=True)
    ours_keys = set(load_file(str(tmp_path / "ours" / "model.safetensors")))
    assert set(load_file(str(tmp_path / "theirs" / "model.safetensors"))) == ours_keys  # the original key names
    back = load_policy(str(tmp_path / "theirs"), backend="builtin")
    with torch.no_grad():
        assert (back.logits(torch.tensor(IDS)) - want).abs().max().item() < TOLERANCE
    written = json.loads((tmp_path / "theirs" / "config.json").read_text())
    assert written["model_type"] == cfg["model_type"]


def test_a_rope_the_builtin_model_got_wrong_would_be_seen():
    """The bound is tight enough: llama without its Llama 3 rope scaling is far from transformers' llama."""
    cfg = CONFIGS["llama"]
    plain = perturbed(random_policy({k: v for k, v in cfg.items() if k != "rope_scaling"}, seed=3))
    hf = hf_model(cfg)
    hf.load_state_dict(plain.module.state_dict())
    with torch.no_grad():
        assert (plain.logits(torch.tensor(IDS)) - hf_logits(hf, IDS)).abs().max().item() > 1e-3
