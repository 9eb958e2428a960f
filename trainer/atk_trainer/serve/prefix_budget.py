"""How many tokens of finished sequences the embedded engine keeps for their continuations: the budget of
the built-in decoder's prefix cache (decoders.BuiltinDecoder parks finished sequences up to it, oldest
dropped first). model.engine.prefix_cache_tokens sets it (`--prefix-cache-tokens`, 0 turns the cache
off); `auto`, the default, sizes it from the memory free when a batch starts:

- CUDA: CUDA_SHARE of the GPU memory this process could still allocate (free on the device plus the
  blocks torch's allocator caches but no tensor uses). A new batch's decoder starts after a weight change,
  so the weights, the optimizer state and the last train step's activations are already counted; and
  the engine drops its parked sequences before each train step (Engine.exclusive), so they never compete
  with one. The rest is left to the running batch's own keys and values and the prefill's activations.
- CPU: CPU_TOKENS, fewer where that would take over CPU_SHARE of the machine's available memory. On CPU
  memory is every process's RSS, and the tiny models need no more (CPU_TOKENS is their old 64 MiB).

Tokens, not bytes: one token's keys and values (slot_bytes) are the same for every sequence of a model.
"""
from __future__ import annotations

from typing import Any, Optional

import torch

from ..train.memory import cpu_available_bytes

CUDA_SHARE = 0.25  # of the GPU memory free for the engine; the running batch needs the rest
CPU_SHARE = 0.1  # of the machine's available memory, at most
CPU_TOKENS = 16384  # 64 MiB of the shipped tiny models' fp32 keys and values (4 KiB a token)


def default_prefix_cache_tokens(slot_bytes: int, free_bytes: Optional[int], cuda: bool) -> int:
    """The `auto` budget in tokens for a model whose tokens take `slot_bytes` each (keys and values of
    every layer), given `free_bytes` of memory free for the engine (None: unknown, CPU only)."""
    if cuda:
        return int(CUDA_SHARE * max(free_bytes or 0, 0)) // slot_bytes
    if free_bytes is None:
        return CPU_TOKENS
    return min(CPU_TOKENS, int(CPU_SHARE * max(free_bytes, 0)) // slot_bytes)


def prefix_cache_tokens(setting: Optional[int], device: torch.device, slot_bytes: int) -> int:
    """`setting` (model.engine.prefix_cache_tokens), or for None (`auto`) the default for `device` now."""
    if setting is not None:
        return setting
    return default_prefix_cache_tokens(slot_bytes, free_bytes(device), device.type == "cuda")


def free_bytes(device: torch.device) -> Optional[int]:
    """Memory this process could allocate on `device` now; None where unknown."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return cpu_available_bytes()


def parse_setting(text: Any) -> Optional[int]:
    """`--prefix-cache-tokens`: "auto" -> None, else a whole number >= 0. @raises ValueError."""
    if text == "auto":
        return None
    try:
        value = int(text)
    except (TypeError, ValueError):
        value = -1
    if value < 0 or str(value) != str(text).strip():
        raise ValueError(f"prefix cache tokens: expected auto or a whole number >= 0, got {text!r}")
    return value
