"""LoRA: low-rank adapters on a model's Linear layers, saved in peft's layout.

With the transformers backend and peft installed, peft does the work. Otherwise each targeted
nn.Linear is swapped for a LoRALinear that keeps the frozen `weight`/`bias` under the same names
(so the base state dict and the engine's code are unchanged) and adds `lora_A`/`lora_B`.
Either way the adapter is written as peft writes it (adapter_config.json +
adapter_model.safetensors with `base_model.model.<module>.lora_{A,B}.weight` keys), which peft
and vLLM's LoRA loader read.
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import os
from typing import Dict, Iterator, List, Optional, Tuple

import torch
from torch import nn

from ..model.decoder import linear
from .config import LoraConfig

PEFT_PREFIX = "base_model.model."


class LoRALinear(nn.Module):
    """y = x W^T + b + (alpha / r) * B(A(dropout(x))); W and b frozen, B starts at 0 so y starts unchanged."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float, dropout: float):
        super().__init__()
        self.in_features, self.out_features = base.in_features, base.out_features
        self.weight = base.weight  # (out, in), frozen
        self.bias = base.bias  # (out,) or None, frozen
        self.weight.requires_grad_(False)
        if self.bias is not None:
            self.bias.requires_grad_(False)
        kwargs = {"device": base.weight.device, "dtype": base.weight.dtype}
        self.lora_A = nn.Linear(self.in_features, rank, bias=False, **kwargs)  # (r, in)
        self.lora_B = nn.Linear(rank, self.out_features, bias=False, **kwargs)  # (out, r)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))  # peft's default init
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / rank
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.enabled = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (..., in) -> (..., out)
        y = linear(x, self.weight, self.bias)
        if not self.enabled:
            return y
        return y + self.lora_B(self.lora_A(self.dropout(x))) * self.scaling


def peft_available() -> bool:
    return importlib.util.find_spec("peft") is not None


def apply_lora(module: nn.Module, config: LoraConfig, use_peft: bool) -> nn.Module:
    """Freeze the model and add adapters; returns the module to train (a PeftModel when use_peft)."""
    if use_peft:
        import peft  # type: ignore

        peft_config = peft.LoraConfig(
            r=config.rank,
            lora_alpha=config.alpha,
            lora_dropout=config.dropout,
            target_modules=list(config.target_modules),
            layers_to_transform=None if config.layers_to_transform is None else list(config.layers_to_transform),
            task_type="CAUSAL_LM",
        )
        return peft.get_peft_model(module, peft_config)
    for p in module.parameters():
        p.requires_grad_(False)
    targets = _target_names(module, config.target_modules, config.layers_to_transform)
    if not targets:
        raise ValueError(
            f"lora.target_modules {config.target_modules} (layers_to_transform {config.layers_to_transform}) "
            "match no Linear layer of the model"
        )
    for name in targets:
        parent_name, _, child = name.rpartition(".")
        parent = module.get_submodule(parent_name) if parent_name else module
        setattr(parent, child, LoRALinear(getattr(parent, child), config.rank, config.alpha, config.dropout))
    return module


def adapter_state_dict(module: nn.Module) -> Dict[str, torch.Tensor]:
    """The adapter's tensors under peft's saved key names."""
    return {
        PEFT_PREFIX + name: p.detach().contiguous()
        for name, p in module.state_dict().items()
        if ".lora_A." in name or ".lora_B." in name
    }


def load_adapter_state_dict(module: nn.Module, tensors: Dict[str, torch.Tensor]) -> None:
    """Copy saved adapter tensors (peft key names) into the model's LoRA layers; every one must match."""
    own = {PEFT_PREFIX + n: p for n, p in module.state_dict().items() if ".lora_A." in n or ".lora_B." in n}
    if set(own) != set(tensors):
        missing, extra = sorted(set(own) - set(tensors)), sorted(set(tensors) - set(own))
        raise ValueError(f"adapter does not fit the model (missing {missing[:3]}, unexpected {extra[:3]})")
    with torch.no_grad():
        for key, tensor in tensors.items():
            own[key].copy_(tensor)


def adapter_config(config: LoraConfig, base_model: str) -> dict:
    """adapter_config.json as peft writes it (the fields vLLM reads included)."""
    return {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": base_model,
        "r": config.rank,
        "lora_alpha": config.alpha,
        "lora_dropout": config.dropout,
        "target_modules": sorted(config.target_modules),
        "bias": "none",
        "fan_in_fan_out": False,
        "inference_mode": True,
        "init_lora_weights": True,
        "modules_to_save": None,
        "use_rslora": False,
        "use_dora": False,
        "layers_to_transform": None if config.layers_to_transform is None else sorted(config.layers_to_transform),
        "layers_pattern": None,
        "rank_pattern": {},
        "alpha_pattern": {},
        "revision": None,
    }


def write_adapter(module: nn.Module, config: LoraConfig, base_model: str, directory: str, save_file) -> None:
    """Write adapter_config.json and adapter_model.safetensors into `directory` (save_file(tensors, path))."""
    if hasattr(module, "peft_config"):
        module.save_pretrained(directory)
        return
    with open(os.path.join(directory, "adapter_config.json"), "w") as f:
        json.dump(adapter_config(config, base_model), f, indent=2)
    save_file(adapter_state_dict(module), os.path.join(directory, "adapter_model.safetensors"))


def read_adapter(module: nn.Module, directory: str, load_file) -> None:
    """Load adapter_model.safetensors from `directory` into the model's adapters (load_file(path) -> tensors)."""
    tensors = load_file(os.path.join(directory, "adapter_model.safetensors"))
    if hasattr(module, "peft_config"):
        import peft  # type: ignore

        result = peft.set_peft_model_state_dict(module, tensors)
        if getattr(result, "unexpected_keys", None):
            raise ValueError(f"adapter does not fit the model (unexpected {result.unexpected_keys[:3]})")
        return
    load_adapter_state_dict(module, tensors)


def read_adapter_dir(directory: str, load_file) -> Tuple[dict, Dict[str, torch.Tensor]]:
    """adapter_config.json and adapter_model.safetensors of a peft adapter directory.
    @raises ValueError naming the file that is missing or unreadable."""
    paths = [os.path.join(directory, name) for name in ("adapter_config.json", "adapter_model.safetensors")]
    for path in paths:
        if not os.path.isfile(path):
            raise ValueError(
                f"{path}: no such file (a peft adapter directory has adapter_config.json and adapter_model.safetensors)"
            )
    try:
        with open(paths[0]) as f:
            config = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"{paths[0]}: not JSON ({e})") from None
    return config, load_file(paths[1])


def merge_adapter(module: nn.Module, config: dict, tensors: Dict[str, torch.Tensor]) -> List[str]:
    """W += (lora_alpha / r) * B @ A for every Linear the adapter names: the weights an engine serves
    under the adapter's name. Returns the merged module names.
    @raises ValueError for an adapter variant this does not implement or one that does not fit the model."""
    rank, scaling, pairs = adapter_pairs(config, tensors)
    with torch.no_grad():
        for name, pair in sorted(pairs.items()):
            try:
                layer = module.get_submodule(name)
            except AttributeError:
                raise ValueError(f"adapter_model.safetensors: the model has no module {name!r}") from None
            if not isinstance(layer, nn.Linear):
                raise ValueError(
                    f"adapter_model.safetensors: {name!r} needs lora_A and lora_B for a plain Linear layer"
                )
            delta = lora_delta(name, pair, rank, scaling, tuple(layer.weight.shape), layer.weight.device)
            layer.weight.add_(delta.to(layer.weight.dtype))
    return sorted(pairs)


def adapter_pairs(
    config: dict, tensors: Dict[str, torch.Tensor]
) -> Tuple[int, float, Dict[str, Dict[str, torch.Tensor]]]:
    """(r, lora_alpha / r, {module name: {"A": lora_A (r, in), "B": lora_B (out, r)}}) of a peft adapter.
    @raises ValueError for an adapter variant this does not implement, or a tensor not named as peft names them."""
    for flag in ("use_rslora", "use_dora"):
        if config.get(flag):
            raise ValueError(f"adapter_config.json: {flag} is not supported")
    rank, alpha = config.get("r"), config.get("lora_alpha")
    if not isinstance(rank, int) or rank < 1 or not isinstance(alpha, (int, float)):
        raise ValueError(
            f"adapter_config.json: expected integer r and numeric lora_alpha, got r={rank!r}, lora_alpha={alpha!r}"
        )
    pairs: Dict[str, Dict[str, torch.Tensor]] = {}
    for key, tensor in tensors.items():
        name, sep, part = key[len(PEFT_PREFIX) :].rpartition(".lora_")
        if not key.startswith(PEFT_PREFIX) or not sep or part not in ("A.weight", "B.weight"):
            raise ValueError(
                f"adapter_model.safetensors: unexpected tensor {key!r} "
                f"(expected {PEFT_PREFIX}<module>.lora_{{A,B}}.weight)"
            )
        pairs.setdefault(name, {})[part[0]] = tensor
    return rank, alpha / rank, pairs


def lora_delta(
    name: str, pair: Dict[str, torch.Tensor], rank: int, scaling: float, shape: Tuple[int, ...], device=None
) -> torch.Tensor:
    """(out, in) float32 on `device`: scaling * B @ A, what the adapter adds to the weight of shape `shape`
    of module `name`.
    @raises ValueError when the pair is incomplete or does not fit that weight."""
    if set(pair) != {"A", "B"}:
        raise ValueError(f"adapter_model.safetensors: {name!r} needs lora_A and lora_B for a plain Linear layer")
    a, b = pair["A"], pair["B"]  # (r, in), (out, r)
    out_features, in_features = shape
    if a.shape != (rank, in_features) or b.shape != (out_features, rank):
        raise ValueError(
            f"adapter_model.safetensors: {name!r} has lora_A {tuple(a.shape)} and lora_B {tuple(b.shape)}; "
            f"with r={rank} the layer needs ({rank}, {in_features}) and ({out_features}, {rank})"
        )
    return (b.to(device, torch.float32) @ a.to(device, torch.float32)) * scaling


@contextlib.contextmanager
def adapters_disabled(module: nn.Module) -> Iterator[None]:
    """Run the base model without its adapters (the frozen reference for the KL penalty)."""
    if hasattr(module, "disable_adapter"):  # peft
        with module.disable_adapter():
            yield
        return
    layers = [m for m in module.modules() if isinstance(m, LoRALinear)]
    for m in layers:
        m.enabled = False
    try:
        yield
    finally:
        for m in layers:
            m.enabled = True


def _target_names(module: nn.Module, targets: List[str], layers: Optional[List[int]] = None) -> List[str]:
    """Names of the Linear layers named in `targets`, within the decoder layers `layers` (`...layers.N....`)."""
    wanted = set(targets)
    names = [n for n, m in module.named_modules() if isinstance(m, nn.Linear) and n.rpartition(".")[2] in wanted]
    if layers is None:
        return names
    allowed = set(layers)
    return [n for n in names if (i := _layer_index(n)) is not None and i in allowed]


def _layer_index(name: str) -> Optional[int]:
    parts = name.split(".")
    for i, part in enumerate(parts[:-1]):
        if part == "layers" and parts[i + 1].isdigit():
            return int(parts[i + 1])
    return None
