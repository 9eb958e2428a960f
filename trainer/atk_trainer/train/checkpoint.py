"""Trainer checkpoints: the weights (HF layout) or the LoRA adapter (peft layout), plus trainer_state.pt,
a plain dict with the optimizer, schedule, counters, RNG states and the resolved config for the record.

`save` writes into `<dir>.tmp` and renames it to `<dir>` only when complete, so a crash never leaves a
half-written checkpoint where a complete one was. `load` restores everything `save` wrote: exact resume.
"""
from __future__ import annotations

import os
import random
import shutil
from typing import Any, Dict, Optional, Protocol

import torch

from ..model.modeling import Policy
from ..model.safetensors_io import load_dir, load_file, save_file
from . import lora as lora_lib
from . import sync_fault
from .config import TrainConfig, config_dict

STATE_FILE = "trainer_state.pt"
STATE_FORMAT = 1


class Checkpointed(Protocol):
    """What save and load read and restore of a trainer (train.Trainer), declared here so that this
    module does not import the trainer that calls it."""

    config: TrainConfig
    peers: Any  # distributed.Peers with more than one rank, else None
    policy: Policy  # the full weights (with FSDP, rank 0's serving copy)
    train_policy: Policy  # the one the optimizer steps (its module FSDP-wrapped when sharded)
    sharded: bool
    optimizer: torch.optim.Optimizer
    scheduler: Any  # torch.optim.lr_scheduler.LambdaLR
    step_count: int
    policy_version: int


def save(
    trainer: Checkpointed, directory: str, weights_only: bool = False, dtype: Optional[torch.dtype] = None
) -> Dict[str, Any]:
    """Write weights or the adapter plus trainer_state.pt, atomically.
    `weights_only` leaves out trainer_state.pt: what an engine loads, not a checkpoint to resume
    (the optimizer state is twice the weights' size, too much to write for every weight sync), and
    `dtype` (weights only) writes full weights in the dtype the engine serves (half the bytes in bf16).
    With several ranks only rank 0 writes: its `policy` holds the full weights (with FSDP, the serving
    copy refreshed after every step); the FSDP optimizer state is gathered from all ranks."""
    directory = os.path.abspath(directory)
    optimizer_state = None if weights_only else _optimizer_state(trainer)
    written = {"dir": directory, "policy_version": trainer.policy_version, "step": trainer.step_count}
    if trainer.peers is not None and not trainer.peers.leader:
        return written
    tmp = directory + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    if trainer.config.lora is not None:
        base = getattr(trainer.policy, "path", None) or ""
        lora_lib.write_adapter(trainer.policy.module, trainer.config.lora, base, tmp, save_file)
        if weights_only:
            sync_fault.plant_adapter(tmp, load_file, save_file)
    else:
        trainer.policy.save_pretrained(tmp, dtype=dtype if weights_only else None)
        if weights_only:
            sync_fault.plant_weights_file(getattr(trainer, "stale_layer", None), tmp, load_file, save_file)
    if not weights_only:
        torch.save(_state(trainer, optimizer_state), os.path.join(tmp, STATE_FILE))
    if os.path.exists(directory):
        old = directory + ".old"
        shutil.rmtree(old, ignore_errors=True)
        os.rename(directory, old)
        os.rename(tmp, directory)
        shutil.rmtree(old)
    else:
        os.rename(tmp, directory)
    return written


def load(trainer: Checkpointed, directory: str) -> Dict[str, Any]:
    """Restore weights/adapter, optimizer, schedule, counters and RNG states written by `save`.
    Every rank reads the directory (one machine, one file system); with FSDP rank 0 reads the weights
    into its serving copy and the shards take them from there."""
    directory = os.path.abspath(directory)
    state_path = os.path.join(directory, STATE_FILE)
    if not os.path.exists(state_path):
        raise FileNotFoundError(f"{state_path}: not a checkpoint written by atk_trainer")
    state = torch.load(state_path, map_location="cpu", weights_only=False)  # our own file: RNG tuples, config
    if state.get("format") != STATE_FORMAT:
        raise ValueError(f"{state_path}: unknown checkpoint format {state.get('format')!r}")
    if (state["config"]["lora"] is None) != (trainer.config.lora is None):
        raise ValueError(
            f"{directory}: checkpoint and config disagree on LoRA; load it with the config it was saved with"
        )
    failure: Optional[BaseException] = None
    try:
        if trainer.sharded and not trainer.peers.leader:
            pass  # no unsharded copy here: load_sharded below
        elif trainer.config.lora is not None:
            lora_lib.read_adapter(trainer.policy.module, directory, load_file)
        else:
            load_full_weights(trainer.policy.module, directory)
    except Exception as e:  # noqa: BLE001 - re-raised below on this rank; the others must not all-gather alone
        failure = e
    if trainer.sharded:
        trainer.peers.check(failure)
    elif failure is not None:
        raise failure
    optimizer_state = state["optimizer"]
    if trainer.sharded:
        trainer.peers.load_sharded(trainer.train_policy.module, trainer.policy.module if trainer.peers.leader else None)
        optimizer_state = trainer.peers.shard_optimizer_state(
            trainer.train_policy.module, optimizer_state, trainer.optimizer
        )
    trainer.optimizer.load_state_dict(optimizer_state)
    trainer.scheduler.load_state_dict(state["scheduler"])
    trainer.step_count = state["step"]
    trainer.policy_version = state["policy_version"]
    set_rng_state(state["rng"])
    return {"dir": directory, "policy_version": trainer.policy_version, "step": trainer.step_count}


def _optimizer_state(trainer: Checkpointed) -> Dict[str, Any]:
    if trainer.sharded:
        return trainer.peers.full_optimizer_state(trainer.train_policy.module, trainer.optimizer)
    return trainer.optimizer.state_dict()


def _state(trainer: Checkpointed, optimizer_state: Dict[str, Any]) -> Dict[str, Any]:
    """A plain dict: everything exact resume needs, and the resolved config for the record."""
    return {
        "format": STATE_FORMAT,
        "config": config_dict(trainer.config),
        "step": trainer.step_count,
        "policy_version": trainer.policy_version,
        "optimizer": optimizer_state,
        "scheduler": trainer.scheduler.state_dict(),
        "rng": get_rng_state(),
    }


def load_full_weights(module: torch.nn.Module, directory: str) -> None:
    """Copy the weights of the Hugging Face checkpoint in `directory` into `module` (HF key names).
    Only a tied lm_head may be missing from the files."""
    tensors = load_dir(directory)
    own = module.state_dict()
    unexpected = sorted(set(tensors) - set(own))
    missing = [k for k in sorted(set(own) - set(tensors)) if not _tied(module, k)]
    if unexpected or missing:
        raise ValueError(
            f"{directory}: weights do not fit the model (missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    with torch.no_grad():
        for key, tensor in tensors.items():
            own[key].copy_(tensor)


def _tied(module: torch.nn.Module, key: str) -> bool:
    # state_dict() lists a tied lm_head.weight that shares storage with the embedding; files omit it.
    if not key.endswith("lm_head.weight"):
        return False
    embeddings = [p for n, p in module.state_dict().items() if n.endswith("embed_tokens.weight")]
    head = module.state_dict()[key]
    return any(e.data_ptr() == head.data_ptr() for e in embeddings)


def get_rng_state() -> Dict[str, Any]:
    return {
        "python": random.getstate(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_state(state: Dict[str, Any]) -> None:
    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
