"""A GGUF file (llama.cpp's format) as a Hugging Face model directory: config.json, safetensors weights in
the dtype asked, and the tokenizer files of gguf_tokenizer. Reading and dequantizing are PyPI's `gguf`
package (llama.cpp's own Python library); what is ours is the mapping back to transformers' names and
layout, which llama.cpp's converter changed in one place: for the llama architecture it permuted the rows
of q_proj and k_proj so that its rotary embedding, which rotates adjacent pairs (x[2i], x[2i+1]), computes
what transformers' rotates as halves (x[i], x[i + d/2]). Undoing that permutation is what makes the
imported model agree with the GGUF under llama.cpp's arithmetic. qwen2 and qwen3 use the halves layout
in llama.cpp too and are not permuted.

Mistral's 7B models come as GGUF architecture `llama` (llama.cpp has no separate one for them) and import
as LlamaForCausalLM: the same computation, since llama.cpp drops their sliding window as well.
"""
from __future__ import annotations

import json
import math
import os
import struct
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

import numpy as np
import torch

from .gguf_tokenizer import GgufImportError, tokenizer_files
from .safetensors_io import INDEX_FILE, save_file

# GGUF architecture -> (model_type, transformers class). Only what the built-in decoder also runs.
ARCHITECTURES = {
    "llama": ("llama", "LlamaForCausalLM"),
    "qwen2": ("qwen2", "Qwen2ForCausalLM"),
    "qwen3": ("qwen3", "Qwen3ForCausalLM"),
}
# The quantizations this importer is tested on (gguf dequantizes more; each added here needs a test file).
TENSOR_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
# Per-layer GGUF tensor -> transformers parameter (with .weight or .bias appended as in the GGUF).
LAYER_TENSORS = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm",
    "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
GLOBAL_TENSORS = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
# One safetensors file is written at a time; a model larger than this is split into shards with an index.
SHARD_BYTES = 2 * 1024**3


def import_gguf(path: str, out_dir: str, dtype: str = "float32") -> Dict[str, Any]:
    """Write `out_dir` from the GGUF at `path`; returns what was written (architecture, parameters,
    tensor types, files) for the caller to print.
    @raises GgufImportError for an architecture, tensor type or tokenizer this importer does not handle."""
    import gguf  # PyPI's gguf: only the importer needs it, so the trainer runs without it

    if dtype not in DTYPES:
        raise GgufImportError(f"--dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    try:
        reader = gguf.GGUFReader(path)
    except (ValueError, OSError, struct.error) as e:
        raise GgufImportError(f"{path}: not a GGUF file gguf {gguf_version()} can read ({e})") from None
    meta = Metadata(reader, path)
    arch = meta.str("general.architecture")
    if arch not in ARCHITECTURES:
        raise GgufImportError(
            f"{path}: architecture {arch!r} is not one atk imports ({', '.join(ARCHITECTURES)}); "
            "convert the original Hugging Face checkpoint instead"
        )
    config = model_config(meta, arch, reader, dtype)
    names = [t.name for t in reader.tensors]
    os.makedirs(out_dir, exist_ok=True)
    files = write_weights(reader, config, out_dir, DTYPES[dtype], path)
    for name, content in tokenizer_files(meta, config).items():
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            f.write(content)
        files.append(name)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    files.append("config.json")
    types: Dict[str, int] = {}
    for t in reader.tensors:
        types[t.tensor_type.name] = types.get(t.tensor_type.name, 0) + 1
    return {
        "out": os.path.abspath(out_dir),
        "architecture": arch,
        "model_type": config["model_type"],
        "parameters": int(sum(int(t.n_elements) for t in reader.tensors if t.name != "rope_freqs.weight")),
        "tensors": len(names),
        "tensor_types": types,
        "dtype": dtype,
        "gguf": gguf_version(),
        "files": sorted(files),
    }


def gguf_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gguf")
    except PackageNotFoundError:
        return "unknown"


class Metadata:
    """Typed access to a GGUF file's key/value metadata, naming the file and key when one is missing."""

    def __init__(self, reader: Any, path: str):
        self.fields = reader.fields
        self.path = path

    def has(self, key: str) -> bool:
        return key in self.fields

    def get(self, key: str, default: Any = None) -> Any:
        field = self.fields.get(key)
        return default if field is None else field.contents()

    def str(self, key: str) -> str:
        value = self.get(key)
        if not isinstance(value, str):
            raise GgufImportError(f"{self.path}: metadata {key} is missing or not a string")
        return value

    def int(self, key: str, default: Optional[int] = None) -> int:
        value = self.get(key, default)
        if isinstance(value, list):  # per-layer counts: atk's decoder needs one value for all layers
            if len(set(value)) != 1:
                raise GgufImportError(f"{self.path}: metadata {key} differs between layers ({value[:4]}...)")
            value = value[0]
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise GgufImportError(f"{self.path}: metadata {key} is missing or not an integer")
        return int(value)

    def float(self, key: str, default: Optional[float] = None) -> float:
        value = self.get(key, default)
        if not isinstance(value, (int, float, np.floating)):
            raise GgufImportError(f"{self.path}: metadata {key} is missing or not a number")
        # GGUF stores float32: the shortest decimal that rounds to it (9.999999747e-06 -> 1e-05)
        return float(str(np.float32(value)))


def model_config(meta: Metadata, arch: str, reader: Any, dtype: str) -> Dict[str, Any]:
    """config.json for the GGUF's hyperparameters, with transformers' keys for `arch`."""
    model_type, cls = ARCHITECTURES[arch]
    tensors = {t.name for t in reader.tensors}
    heads = meta.int(f"{arch}.attention.head_count")
    hidden = meta.int(f"{arch}.embedding_length")
    embedding_rows = next(int(t.shape[1]) for t in reader.tensors if t.name == "token_embd.weight")
    head_dim = meta.int(f"{arch}.attention.key_length", hidden // heads)
    if meta.int(f"{arch}.attention.value_length", head_dim) != head_dim:
        raise GgufImportError(f"{meta.path}: key and value head sizes differ, which atk's decoder does not run")
    if meta.int(f"{arch}.rope.dimension_count", head_dim) != head_dim:
        raise GgufImportError(f"{meta.path}: rotary embedding over part of each head, which atk's decoder does not run")
    config: Dict[str, Any] = {
        "architectures": [cls],
        "model_type": model_type,
        "vocab_size": embedding_rows,
        "hidden_size": hidden,
        "intermediate_size": meta.int(f"{arch}.feed_forward_length"),
        "num_hidden_layers": meta.int(f"{arch}.block_count"),
        "num_attention_heads": heads,
        "num_key_value_heads": meta.int(f"{arch}.attention.head_count_kv", heads),
        "head_dim": head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": meta.int(f"{arch}.context_length"),
        "rms_norm_eps": meta.float(f"{arch}.attention.layer_norm_rms_epsilon"),
        "rope_theta": meta.float(f"{arch}.rope.freq_base", 10000.0),
        "rope_scaling": rope_scaling(meta, arch, reader, head_dim),
        "tie_word_embeddings": "output.weight" not in tensors,
        "torch_dtype": dtype,
        "use_cache": True,
    }
    if model_type == "llama":
        config["attention_bias"] = "blk.0.attn_q.bias" in tensors
        config["mlp_bias"] = "blk.0.ffn_up.bias" in tensors
    else:
        config["use_sliding_window"] = False
        config["sliding_window"] = None
        if model_type == "qwen3":
            config["attention_bias"] = "blk.0.attn_q.bias" in tensors
    for key, name in (("bos_token_id", "bos"), ("eos_token_id", "eos"), ("pad_token_id", "padding")):
        if meta.has(f"tokenizer.ggml.{name}_token_id"):
            config[key] = meta.int(f"tokenizer.ggml.{name}_token_id")
    return config


def rope_scaling(meta: Metadata, arch: str, reader: Any, head_dim: int) -> Optional[Dict[str, Any]]:
    """config.json's rope_scaling: llama.cpp's linear and yarn keys as transformers spells them, and Llama
    3's frequency factors (which llama.cpp stores as the tensor rope_freqs, one divisor per frequency)
    as the llama3 parameters that give the same divisors."""
    kind = meta.get(f"{arch}.rope.scaling.type")
    freqs = next((t for t in reader.tensors if t.name == "rope_freqs.weight"), None)
    if freqs is not None:
        return llama3_scaling(np.asarray(freqs.data, dtype=np.float64), meta, arch, head_dim)
    if kind in (None, "none"):
        return None
    factor = meta.float(f"{arch}.rope.scaling.factor")
    if kind == "linear":
        return {"rope_type": "linear", "factor": factor}
    if kind == "yarn":
        scaling: Dict[str, Any] = {"rope_type": "yarn", "factor": factor}
        if meta.has(f"{arch}.rope.scaling.original_context_length"):
            scaling["original_max_position_embeddings"] = meta.int(f"{arch}.rope.scaling.original_context_length")
        return scaling
    raise GgufImportError(f"{meta.path}: rope scaling {kind!r} is not one atk imports (linear, yarn, llama3)")


def llama3_scaling(divisors: np.ndarray, meta: Metadata, arch: str, head_dim: int) -> Dict[str, Any]:
    """The llama3 rope_scaling whose divisors per frequency are `divisors` (D/2,): 1 for short wavelengths,
    `factor` for long ones, and 1 / ((1 - s) / factor + s) between, s linear in context / wavelength. Two
    points of the ramp fix s's slope and offset; the original context is llama.cpp's when it kept one."""
    theta = meta.float(f"{arch}.rope.freq_base", 10000.0)
    factor = float(divisors.max())
    inv_freq = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)  # (D/2,)
    context = meta.int(f"{arch}.rope.scaling.original_context_length", 8192)
    ramp = [(i, (1 / d - 1 / factor) / (1 - 1 / factor)) for i, d in enumerate(divisors) if 1 < d < factor]
    if factor <= 1 or len(ramp) < 2:
        raise GgufImportError(f"{meta.path}: rope_freqs does not have the shape of Llama 3's rope scaling")
    (i, s_i), (j, s_j) = ramp[0], ramp[-1]
    x_i, x_j = context * inv_freq[i] / (2 * math.pi), context * inv_freq[j] / (2 * math.pi)  # context / wavelength
    slope = (s_j - s_i) / (x_j - x_i)  # s = (x - low) / (high - low)
    low = x_i - s_i / slope
    high = low + 1 / slope
    return {
        "rope_type": "llama3",
        "factor": factor,
        "low_freq_factor": low,
        "high_freq_factor": high,
        "original_max_position_embeddings": context,
    }


def write_weights(reader: Any, config: Mapping[str, Any], out_dir: str, dtype: torch.dtype, path: str) -> List[str]:
    """Dequantize every tensor into transformers' name and layout, written as model.safetensors or, past
    SHARD_BYTES, as numbered shards with model.safetensors.index.json (one shard in memory at a time)."""
    element = torch.tensor([], dtype=dtype).element_size()
    entries = [(t, hf_name(t.name, path)) for t in reader.tensors if t.name != "rope_freqs.weight"]
    for t, _ in entries:
        if t.tensor_type.name not in TENSOR_TYPES:
            raise GgufImportError(
                f"{path}: tensor {t.name} is {t.tensor_type.name}; atk imports {', '.join(TENSOR_TYPES)}"
            )
    shards: List[List[Tuple[Any, str]]] = [[]]
    size = 0
    for t, name in entries:
        nbytes = int(t.n_elements) * element
        if shards[-1] and size + nbytes > SHARD_BYTES:
            shards.append([])
            size = 0
        shards[-1].append((t, name))
        size += nbytes
    files = (
        ["model.safetensors"]
        if len(shards) == 1
        else [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    )
    weight_map: Dict[str, str] = {}
    for file, shard in zip(files, shards):
        tensors = dict(hf_tensors(shard, config, dtype))
        save_file(tensors, os.path.join(out_dir, file), {"format": "pt"})
        weight_map.update({name: file for name in tensors})
    if len(files) > 1:
        total = sum(int(t.n_elements) * element for t, _ in entries)
        with open(os.path.join(out_dir, INDEX_FILE), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)
        files.append(INDEX_FILE)
    return files


def hf_name(gguf_name: str, path: str) -> str:
    """transformers' parameter name for a GGUF tensor name: blk.3.attn_q.weight ->
    model.layers.3.self_attn.q_proj.weight."""
    stem, _, kind = gguf_name.rpartition(".")
    parts = stem.split(".")
    if len(parts) == 3 and parts[0] == "blk" and parts[2] in LAYER_TENSORS:
        return f"model.layers.{parts[1]}.{LAYER_TENSORS[parts[2]]}.{kind}"
    if len(parts) == 1 and parts[0] in GLOBAL_TENSORS:
        return f"{GLOBAL_TENSORS[parts[0]]}.{kind}"
    raise GgufImportError(f"{path}: tensor {gguf_name} has no counterpart in the Hugging Face layout")


def hf_tensors(
    shard: List[Tuple[Any, str]], config: Mapping[str, Any], dtype: torch.dtype
) -> Iterator[Tuple[str, torch.Tensor]]:
    """(name, tensor) for one shard's GGUF tensors, dequantized (float32), unpermuted and cast to `dtype`."""
    import gguf

    for t, name in shard:
        values = gguf.quants.dequantize(t.data, t.tensor_type)  # (rows, cols) in float32, or (n,) for vectors
        shape = [int(d) for d in reversed(t.shape)]  # GGUF lists the fastest dimension first
        values = np.array(values, dtype=np.float32).reshape(shape)  # a copy: the reader's arrays map the file
        if config["model_type"] == "llama" and (".q_proj." in name or ".k_proj." in name):
            heads = config["num_attention_heads"] if ".q_proj." in name else config["num_key_value_heads"]
            values = unpermute_rotary(values, heads)
        yield name, torch.from_numpy(values).to(dtype)


def unpermute_rotary(weight: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's convert_hf_to_gguf `permute` of a q or k projection (rows (heads * D, ...), or a
    bias (heads * D,)): it regrouped each head's rows from halves [x0..x(D/2-1), x(D/2)..x(D-1)] into
    pairs [x0, x(D/2), x1, x(D/2+1), ...]; this regroups them back."""
    rest = weight.shape[1:]
    per_head = weight.shape[0] // heads
    return np.ascontiguousarray(
        weight.reshape(heads, per_head // 2, 2, *rest).swapaxes(1, 2).reshape(weight.shape)
    )  # (heads * D, ...)
