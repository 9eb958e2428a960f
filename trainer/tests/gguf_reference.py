"""An independent float64 forward over a GGUF file's own tensors, as llama.cpp computes it, and a writer of
small GGUF files for the importer's tests.

The forward reads the GGUF tensor names and layout directly (no name mapping, no unpermuting) and applies
rotary embeddings the way llama.cpp does for each architecture: adjacent pairs (x[2i], x[2i+1]) for llama
("normal" rope), halves (x[i], x[i + D/2]) for qwen2/qwen3 ("neox" rope). An imported model that agrees
with it has had its names, permutation and configuration undone correctly.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np

import gguf

NEOX = ("qwen2", "qwen3")


def gguf_tensors(path: str) -> Dict[str, np.ndarray]:
    """Every tensor of the file, dequantized to float64, shaped as numpy rows (GGUF's dims reversed)."""
    reader = gguf.GGUFReader(path)
    out = {}
    for t in reader.tensors:
        values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64)
        out[t.name] = values.reshape([int(d) for d in reversed(t.shape)])
    return out


def reference_logits(path: str, ids: Sequence[int]) -> np.ndarray:
    """(T, V) next-token logits for `ids` in float64."""
    reader = gguf.GGUFReader(path)
    fields = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("tokenizer.")}
    arch = fields["general.architecture"]
    w = gguf_tensors(path)
    heads = int(fields[f"{arch}.attention.head_count"])
    kv_heads = int(fields.get(f"{arch}.attention.head_count_kv", heads))
    hidden = int(fields[f"{arch}.embedding_length"])
    head_dim = int(fields.get(f"{arch}.attention.key_length", hidden // heads))
    eps = float(fields[f"{arch}.attention.layer_norm_rms_epsilon"])
    theta = float(fields.get(f"{arch}.rope.freq_base", 10000.0))
    layers = int(fields[f"{arch}.block_count"])
    T = len(ids)
    x = w["token_embd.weight"][list(ids)]  # (T, H)
    inv_freq = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)  # (D/2,)
    if "rope_freqs.weight" in w:
        inv_freq = inv_freq / w["rope_freqs.weight"]
    angles = np.arange(T, dtype=np.float64)[:, None] * inv_freq[None, :]  # (T, D/2)
    cos, sin = np.cos(angles), np.sin(angles)
    for i in range(layers):
        p = f"blk.{i}."
        h = rms_norm(x, w[p + "attn_norm.weight"], eps)
        q = linear(h, w, p + "attn_q").reshape(T, heads, head_dim)
        k = linear(h, w, p + "attn_k").reshape(T, kv_heads, head_dim)
        v = linear(h, w, p + "attn_v").reshape(T, kv_heads, head_dim)
        if p + "attn_q_norm.weight" in w:
            q = rms_norm(q, w[p + "attn_q_norm.weight"], eps)
            k = rms_norm(k, w[p + "attn_k_norm.weight"], eps)
        q, k = rope(q, cos, sin, arch in NEOX), rope(k, cos, sin, arch in NEOX)
        group = heads // kv_heads
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)  # (T, heads, D)
        scores = np.einsum("thd,shd->hts", q, k) / np.sqrt(head_dim)  # (heads, T, T)
        scores = scores + np.triu(np.full((T, T), -np.inf), 1)[None]
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores = scores / scores.sum(-1, keepdims=True)
        attn = np.einsum("hts,shd->thd", scores, v).reshape(T, heads * head_dim)
        x = x + linear(attn, w, p + "attn_output")
        h = rms_norm(x, w[p + "ffn_norm.weight"], eps)
        gate = linear(h, w, p + "ffn_gate")
        x = x + linear(gate / (1 + np.exp(-gate)) * linear(h, w, p + "ffn_up"), w, p + "ffn_down")
    x = rms_norm(x, w["output_norm.weight"], eps)
    return x @ w.get("output.weight", w["token_embd.weight"]).T  # (T, V)


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * weight


def linear(x: np.ndarray, w: Dict[str, np.ndarray], name: str) -> np.ndarray:
    y = x @ w[name + ".weight"].T
    return y + w[name + ".bias"] if name + ".bias" in w else y


def rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, neox: bool) -> np.ndarray:
    """x (T, heads, D) rotated by position: halves (neox) or adjacent pairs (llama.cpp's normal mode)."""
    c, s = cos[:, None, :], sin[:, None, :]  # (T, 1, D/2)
    if neox:
        half = x.shape[-1] // 2
        a, b = x[..., :half], x[..., half:]
        return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = a * c - b * s, a * s + b * c
    return out


# Bytes per block of the K-quants gguf cannot quantize, where each keeps its float16 super-block scales,
# and a range for them that keeps weights near 1: the tests fill blocks with random bytes and set those
# scales, which makes valid blocks.
K_QUANT_SCALES = {
    "Q2_K": (84, [80, 82], (5e-3, 1e-2)),
    "Q3_K": (110, [108], (1e-3, 3e-3)),
    "Q4_K": (144, [0, 2], (3e-4, 1e-3)),
    "Q5_K": (176, [0, 2], (2e-4, 5e-4)),
    "Q6_K": (210, [208], (1e-4, 3e-4)),
}


def quantized(values: np.ndarray, kind: str, rng: np.random.Generator):
    """(data, raw_shape, raw_dtype) for GGUFWriter.add_tensor: `values` (rows, cols) in type `kind`; for
    K-quants, random blocks of the same shape instead of `values`."""
    qtype = gguf.GGMLQuantizationType[kind]
    if kind == "F32":
        return values.astype(np.float32), None, None
    if kind == "F16":
        return values.astype(np.float16), None, None
    if kind in K_QUANT_SCALES:
        size, scale_offsets, (low, high) = K_QUANT_SCALES[kind]
        rows, cols = values.shape
        blocks = rng.integers(0, 256, size=(rows, cols // 256, size), dtype=np.uint8)
        for offset in scale_offsets:
            scale = np.float16(rng.uniform(low, high, size=(rows, cols // 256))).view(np.uint8).reshape(rows, -1, 2)
            blocks[:, :, offset : offset + 2] = scale
        return blocks.reshape(rows, -1), None, qtype
    # uint8 rows of blocks: the writer reads the element shape from the byte shape and the type
    return gguf.quants.quantize(values.astype(np.float32), qtype), None, qtype


def write_gguf(
    path: str,
    arch: str,
    *,
    kind: str = "F32",
    vocab: Optional[List[str]] = None,
    merges: Optional[List[str]] = None,
    token_types: Optional[List[int]] = None,
    hidden: int = 256,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    ffn: int = 512,
    tied: bool = True,
    qkv_bias: bool = False,
    seed: int = 0,
    extra: Optional[Dict[str, object]] = None,
    pre: str = "smollm",
) -> None:
    """A small random model of `arch` (llama, qwen2, qwen3) with every weight matrix in `kind`."""
    rng = np.random.default_rng(seed)
    head_dim = hidden // heads
    vocab = vocab or [f"t{i}" for i in range(256)]
    w = gguf.GGUFWriter(path, arch)
    w.add_block_count(layers)
    w.add_context_length(512)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(vocab)
    w.add_token_types(token_types or [1] * len(vocab))
    w.add_token_merges(merges or [])
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)
    w.add_chat_template("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}")
    for key, value in (extra or {}).items():
        if isinstance(value, str):
            w.add_string(key, value)
        elif isinstance(value, bool):
            w.add_bool(key, value)
        else:
            w.add_float32(key, float(value))

    def matrix(name: str, rows: int, cols: int, std: float) -> None:
        data, shape, raw = quantized(rng.normal(0, std, size=(rows, cols)), kind, rng)
        w.add_tensor(name, data, raw_shape=shape, raw_dtype=raw)

    def vector(name: str, n: int, mean: float = 1.0) -> None:
        w.add_tensor(name, (mean + rng.normal(0, 0.1, size=n)).astype(np.float32))

    matrix("token_embd.weight", len(vocab), hidden, 0.5)
    for i in range(layers):
        p = f"blk.{i}."
        vector(p + "attn_norm.weight", hidden)
        matrix(p + "attn_q.weight", heads * head_dim, hidden, 0.1)
        matrix(p + "attn_k.weight", kv_heads * head_dim, hidden, 0.1)
        matrix(p + "attn_v.weight", kv_heads * head_dim, hidden, 0.1)
        if qkv_bias:
            vector(p + "attn_q.bias", heads * head_dim, 0.0)
            vector(p + "attn_k.bias", kv_heads * head_dim, 0.0)
            vector(p + "attn_v.bias", kv_heads * head_dim, 0.0)
        if arch == "qwen3":
            vector(p + "attn_q_norm.weight", head_dim)
            vector(p + "attn_k_norm.weight", head_dim)
        matrix(p + "attn_output.weight", hidden, heads * head_dim, 0.1)
        vector(p + "ffn_norm.weight", hidden)
        matrix(p + "ffn_gate.weight", ffn, hidden, 0.1)
        matrix(p + "ffn_up.weight", ffn, hidden, 0.1)
        matrix(p + "ffn_down.weight", hidden, ffn, 0.1)
    vector("output_norm.weight", hidden)
    if not tied:
        matrix("output.weight", len(vocab), hidden, 0.1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
