"""A LoRA adapter merged into its base model's weights, written as a plain Hugging Face model directory
(what `atk export --merge-lora` hands to transformers or vLLM, which then need no peft).

It works on the safetensors files, not on a model: every architecture merges (built in or not), each
merged weight keeps the base file's dtype and key name, the base's sharding and index are kept, and only
one shard is in memory at a time.
"""
from __future__ import annotations

import os
import shutil
from typing import Any, Dict, Optional

from ..model.safetensors_io import INDEX_FILE, load_file, load_metadata, save_file, weight_files
from . import lora as lora_lib


def export_merged(adapter_dir: str, out_dir: str, base_dir: Optional[str] = None) -> Dict[str, Any]:
    """Write base + adapter into `out_dir`: config.json, the weight files (W + lora_alpha / r * B @ A, added
    in float32 and rounded once to W's dtype) and the index when the base has one. `base_dir` defaults to
    the adapter's base_model_name_or_path. Returns what was written.
    @raises ValueError naming the file when the adapter or the base is missing or they do not fit."""
    config, tensors = lora_lib.read_adapter_dir(adapter_dir, load_file)
    base_dir = base_dir or config.get("base_model_name_or_path")
    config_path = os.path.join(adapter_dir, "adapter_config.json")
    if not base_dir or not os.path.isfile(os.path.join(base_dir, "config.json")):
        raise ValueError(
            f"{config_path}: base_model_name_or_path {base_dir!r} is not a model directory with config.json"
        )
    try:
        files = weight_files(base_dir)
    except FileNotFoundError as e:
        raise ValueError(f"{e} (a run that started from init: random has no base weights to merge into)") from None
    rank, scaling, pairs = lora_lib.adapter_pairs(config, tensors)
    remaining = dict(pairs)
    os.makedirs(out_dir, exist_ok=True)
    dtypes = set()
    for file, _ in files:
        path = os.path.join(base_dir, file)
        weights = load_file(path)
        for name in [n for n in remaining if n + ".weight" in weights]:
            weight = weights[name + ".weight"]  # (out, in)
            delta = lora_lib.lora_delta(name, remaining.pop(name), rank, scaling, tuple(weight.shape))
            weights[name + ".weight"] = (weight.float() + delta).to(weight.dtype)
        dtypes.update(str(t.dtype).replace("torch.", "") for t in weights.values() if t.is_floating_point())
        save_file(weights, os.path.join(out_dir, file), load_metadata(path) or {"format": "pt"})
    if remaining:
        name = sorted(remaining)[0]
        raise ValueError(
            f"{os.path.join(adapter_dir, 'adapter_model.safetensors')}: the base model {base_dir} has no weight "
            f"{name}.weight to merge {name!r} into"
        )
    for name in ("config.json", INDEX_FILE):
        if os.path.exists(os.path.join(base_dir, name)):
            shutil.copyfile(os.path.join(base_dir, name), os.path.join(out_dir, name))
    return {"out": out_dir, "base": base_dir, "merged": sorted(pairs), "dtypes": sorted(dtypes)}
