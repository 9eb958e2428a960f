"""What the built-in qwen2's forward asks of a KV cache during generation. The model owns this interface;
the caches that implement it live with the engine that drives them (atk_trainer.serve.kv_cache.KVCache,
and the fixed-shape view atk_trainer.serve.static_decode builds for one decode step), so model/ imports
nothing from serve/."""
from __future__ import annotations

from typing import Optional, Protocol, Tuple, runtime_checkable

import torch


@runtime_checkable
class AttentionCache(Protocol):
    """Keys and values of B sequences across one forward of T new tokens per row."""

    def begin(self, input_ids: torch.Tensor, new_valid: Optional[torch.Tensor]) -> torch.Tensor:
        """Take the forward's tokens (B, T) ((B, T) bool `new_valid`: which are real, None = all) into the
        cache; returns the attention mask (B, 1, T, S) bool over the cache's S slots, True = may attend."""
        ...

    def recent(self, window: int) -> torch.Tensor:
        """(B, 1, T, S) bool: for each new token, the slots holding its row's last `window` real tokens
        (sliding-window layers)."""
        ...

    def layer(self, i: int) -> "LayerCache":
        """Layer i's keys and values."""
        ...


@runtime_checkable
class LayerCache(Protocol):
    """One layer's part of an AttentionCache."""

    def append(self, k: torch.Tensor, v: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """Store the new tokens' keys and values (B, Hkv, T, D) each; returns the keys and values of all
        slots the mask covers (B, Hkv, S, D) each."""
        ...
