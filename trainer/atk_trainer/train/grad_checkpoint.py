"""Gradient (activation) checkpointing: recompute each decoder layer's activations in backward instead of
storing them. transformers and peft models have their own switch; the built-in qwen2's layers are wrapped here."""
from __future__ import annotations

import types
from typing import Optional

import torch
import torch.utils.checkpoint


def enable_gradient_checkpointing(module: torch.nn.Module) -> None:
    """Recompute each decoder layer's activations in backward instead of storing them."""
    if hasattr(module, "gradient_checkpointing_enable"):  # transformers / peft
        module.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        return
    layers = decoder_layers(module)
    if layers is None:
        raise ValueError("gradient_checkpointing: the model has no `layers` ModuleList to checkpoint")
    for layer in layers:
        # Bound, not a closure: deepcopy (the KL reference, the FSDP copy, an engine's adapter copy)
        # rebinds a bound method to the copied layer, where a closure would keep running this one.
        layer.forward = types.MethodType(_checkpointed_forward, layer)


def _checkpointed_forward(self, *args, **kwargs):
    forward = type(self).forward.__get__(self)  # the class's forward: the instance attribute is this function
    if not torch.is_grad_enabled():  # generation: nothing to save memory on
        return forward(*args, **kwargs)
    return torch.utils.checkpoint.checkpoint(forward, *args, use_reentrant=False, **kwargs)


def decoder_layers(module: torch.nn.Module) -> Optional[torch.nn.ModuleList]:
    for name, child in module.named_modules():
        if name.rpartition(".")[2] == "layers" and isinstance(child, torch.nn.ModuleList):
            return child
    return None
