"""Debug only: a deliberately broken weight sync, for the tests of atk's sync probe (src/policy/sync-probe.ts),
which must catch each. Set by the environment variable ATK_SYNC_FAULT (never by a recipe), which atk's own
side of the sync reads too (src/engines/sync/sync-fault.ts):

- `skip_layer`: the weights written or broadcast for an engine carry decoder layer 0 as it was loaded, so the
  engine keeps that layer's old values, as a reload that skipped it would;
- `lora_noop`: the adapter written for an engine has its lora_B tensors zeroed, so it loads and does nothing;
- `keep_prefix_cache`: the embedded engine (and its vLLM stand-in) keeps its prefix cache across weight changes,
  and atk sends no /reset_prefix_cache, so continuations reuse keys and values the old weights computed.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Iterable, Iterator, Optional, Tuple

import torch

FAULT_ENV = "ATK_SYNC_FAULT"
FAULTS = ("skip_layer", "lora_noop", "keep_prefix_cache")
SKIPPED_LAYER = ".layers.0."  # in the HF names of decoder layer 0's tensors


def sync_fault() -> Optional[str]:
    """The fault ATK_SYNC_FAULT asks for, if any. @raises ValueError for an unknown one."""
    value = os.environ.get(FAULT_ENV) or None
    if value is not None and value not in FAULTS:
        raise ValueError(f"{FAULT_ENV}={value} is not a sync fault (known: {', '.join(FAULTS)})")
    return value


def stale_layer(module: torch.nn.Module) -> Optional[Dict[str, torch.Tensor]]:
    """With `skip_layer`: a copy of decoder layer 0's weights as they are now (the trainer takes it at load)."""
    if sync_fault() != "skip_layer":
        return None
    return {name: t.detach().clone() for name, t in module.state_dict().items() if SKIPPED_LAYER in name}


def planted_weights(
    stale: Optional[Dict[str, torch.Tensor]], weights: Iterable[Tuple[str, torch.Tensor]]
) -> Iterator[Tuple[str, torch.Tensor]]:
    """`weights` with the tensors `stale` holds replaced by their old values (cast alike); unchanged without it."""
    for name, tensor in weights:
        old = None if stale is None else stale.get(name)
        yield (name, tensor) if old is None else (name, old.to(dtype=tensor.dtype, device=tensor.device))


def plant_weights_file(
    stale: Optional[Dict[str, torch.Tensor]], directory: str, load_file: Any, save_file: Any
) -> None:
    """With `skip_layer`: the model.safetensors written in `directory` with the `stale` tensors' old values."""
    if not stale:
        return
    path = os.path.join(directory, "model.safetensors")
    save_file(dict(planted_weights(stale, load_file(path).items())), path, {"format": "pt"})


def plant_adapter(directory: str, load_file: Any, save_file: Any) -> None:
    """With `lora_noop`: zero the lora_B tensors of the adapter written in `directory` (it then changes nothing)."""
    if sync_fault() != "lora_noop":
        return
    path = os.path.join(directory, "adapter_model.safetensors")
    tensors = load_file(path)
    zeroed = {n: torch.zeros_like(t) if ".lora_B." in n else t for n, t in tensors.items()}
    save_file(zeroed, path, {"format": "pt"})


def keeps_prefix_cache() -> bool:
    """With `keep_prefix_cache`: the engine forgets to drop its prefix cache when the weights change."""
    return sync_fault() == "keep_prefix_cache"
