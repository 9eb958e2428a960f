"""The bf16 copy of the policy the engine serves while the trainer keeps float32 master weights (full
fine-tuning on CUDA): the decode step then runs bf16 weights directly, with no autocast cast of every
weight at every matmul of every step. The copy is refreshed after each weight change (train_step,
load_checkpoint): one device-to-device copy of the weights, what the sync costs."""
from __future__ import annotations

import copy
from typing import Any, Optional

import torch


def serving_dtype(
    device: torch.device, autocast: bool, lora: bool, sharded: bool, weights_dtype: str
) -> Optional[torch.dtype]:
    """bf16 when the trainer's weights are float32 masters under bf16 autocast on CUDA, else None: the
    engine serves the trainer's own module (CPU, LoRA, bf16 weights, and FSDP's serving copy)."""
    if device.type == "cuda" and autocast and not lora and not sharded and weights_dtype == "float32":
        return torch.bfloat16
    return None


class ServingCopy:
    """`policy` is a copy of `master` (a modeling.Policy) with its weights in `dtype`."""

    def __init__(self, master: Any, dtype: torch.dtype):
        self.master = master
        self.policy = copy.copy(master)
        self.policy.module = copy.deepcopy(master.module).to(dtype).eval().requires_grad_(False)
        self._pairs = list(zip(self.policy.module.state_dict().values(), master.module.state_dict().values()))

    @torch.no_grad()
    def refresh(self) -> None:
        """Copy the master weights in (cast to the copy's dtype)."""
        for served, master in self._pairs:
            served.copy_(master)
