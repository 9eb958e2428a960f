"""SmolLM2-135M-Instruct as `atk model fetch smollm2-135m-instruct` imported it, against an independent float64
forward over the GGUF in its wheel (gguf_reference.py): `npm run test:real` sets ATK_REAL_MODEL_DIR,
ATK_REAL_WHEEL and ATK_REAL_MEMBER and runs this in the importer's venv; without them it skips."""
import json
import os
import zipfile

import numpy as np
import pytest
import torch

MODEL = os.environ.get("ATK_REAL_MODEL_DIR")
pytestmark = pytest.mark.skipif(not MODEL, reason="npm run test:real runs this (it needs the fetched model)")

# A ChatML prompt as SmolLM2's tokenizer writes it ("<|im_start|>system\n...What is the capital of France?...").
IDS = [1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28, 7018, 411, 407, 19712, 8182, 2]
IDS += [198, 1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198]


def test_builtin_llama_on_the_import_agrees_with_the_gguf_forward(tmp_path):
    pytest.importorskip("gguf")
    from gguf_reference import reference_logits
    from atk_trainer.model.modeling import load_policy

    with zipfile.ZipFile(os.environ["ATK_REAL_WHEEL"]) as zf:
        gguf_path = zf.extract(os.environ["ATK_REAL_MEMBER"], str(tmp_path))
    expected = reference_logits(gguf_path, IDS)  # (T, V) float64
    policy = load_policy(MODEL, backend="builtin")
    with torch.no_grad():
        actual = policy.logits(torch.tensor([IDS]))[0].double().numpy()
    assert np.abs(actual - expected).max() < 2e-4 * np.abs(expected).max()
    assert (actual.argmax(-1) == expected.argmax(-1)).all()
    # greedy: "The capital of France is Paris."
    assert actual[-1].argmax() == 504


def test_import_is_the_llama_architecture_smollm2_has():
    config = json.load(open(os.path.join(MODEL, "config.json")))
    shape = {k: config[k] for k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads")}
    assert (config["model_type"], shape, config["vocab_size"], config["tie_word_embeddings"]) == (
        "llama",
        {"hidden_size": 576, "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3},
        49152,
        True,
    )
