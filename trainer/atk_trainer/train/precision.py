"""Weights in the dtype they need on CUDA (on CPU nothing changes: float32 everywhere, no autocast).

- LoRA: the frozen base is stored in bf16 (half its memory); only the adapters, their gradients and
  their AdamW state stay float32. The forward runs under bf16 autocast as before.
- Full fine-tuning, `weights_dtype` "float32" (default): float32 master weights, bf16 autocast compute.
- Full fine-tuning, `weights_dtype` "bfloat16": weights and gradients in bf16, AdamW's moments and the
  update in float32, rounded back stochastically (Bf16AdamW): 12 bytes per parameter instead of 16.
"""
from __future__ import annotations

from typing import Iterable, Optional

import torch

WEIGHTS_DTYPES = ("float32", "bfloat16")


def frozen_base_dtype(device: torch.device, autocast: bool, lora: bool) -> Optional[torch.dtype]:
    """The dtype to store frozen (non-trainable) parameters in, or None to leave them as loaded."""
    return torch.bfloat16 if device.type == "cuda" and autocast and lora else None


def full_weights_dtype(device: torch.device, autocast: bool, lora: bool, weights_dtype: str) -> Optional[torch.dtype]:
    """bf16 for full fine-tuning on CUDA with weights_dtype "bfloat16"; None (as loaded) otherwise.
    @raises ValueError when bf16 weights are asked where they do not apply."""
    if weights_dtype == "float32":
        return None
    if lora:
        raise ValueError("weights_dtype: bfloat16 is for full fine-tuning; with LoRA the frozen base is bf16 already")
    if device.type != "cuda" or not autocast:
        raise ValueError(
            "weights_dtype: bfloat16 needs a CUDA device and dtype auto or bfloat16 (CPU trains in float32)"
        )
    return torch.bfloat16


def cast_frozen(module: torch.nn.Module, dtype: torch.dtype) -> int:
    """Store every parameter that does not train in `dtype`, in place; returns how many were cast."""
    cast = 0
    with torch.no_grad():
        for p in module.parameters():
            if not p.requires_grad and p.is_floating_point() and p.dtype != dtype:
                p.data = p.data.to(dtype)
                cast += 1
    return cast


def stochastic_round_to_bf16(x: torch.Tensor, generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """float32 -> bfloat16 rounding up or down with probability proportional to the distance, so small
    updates survive in expectation instead of vanishing below bf16's resolution."""
    bits = x.float().contiguous().view(torch.int32)
    noise = torch.randint(0, 1 << 16, x.shape, device=x.device, dtype=torch.int32, generator=generator)
    # Adding 16 random low bits then truncating them rounds up with probability (low bits) / 2^16.
    return ((bits + noise) & -65536).view(torch.float32).to(torch.bfloat16)


class Bf16AdamW(torch.optim.Optimizer):
    """AdamW for bf16 parameters: moments in float32, the update computed in float32 from the bf16
    weight and written back with stochastic rounding. Same hyper-parameters as torch.optim.AdamW."""

    def __init__(self, params: Iterable, lr: float, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0):
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure=None):  # noqa: D102 - torch.optim.Optimizer's contract
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, dtype=torch.float32)
                    state["exp_avg_sq"] = torch.zeros_like(p, dtype=torch.float32)
                state["step"] += 1
                grad = p.grad.float()
                state["exp_avg"].mul_(beta1).add_(grad, alpha=1 - beta1)
                state["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias1, bias2 = 1 - beta1 ** state["step"], 1 - beta2 ** state["step"]
                weight = p.float() * (1 - group["lr"] * group["weight_decay"])
                denom = (state["exp_avg_sq"] / bias2).sqrt_().add_(group["eps"])
                weight.addcdiv_(state["exp_avg"], denom, value=-group["lr"] / bias1)
                p.copy_(stochastic_round_to_bf16(weight) if p.dtype == torch.bfloat16 else weight)
        return None
