"""More than one trainer process: rank 0 serves HTTP, the other ranks follow its commands.

    python -m torch.distributed.run --standalone --nproc_per_node N -m atk_trainer <the usual args>

torchrun sets WORLD_SIZE, RANK and LOCAL_RANK; with WORLD_SIZE > 1 `server.main` builds `Peers`.
Rank 0 serves the control API and the embedded engine exactly as a single process does; before a
control handler (load_model, train_step, save, load_checkpoint, shutdown) runs there, it sends
[name, body] to the other ranks, which run the same ControlApi handler (with an engine that is never
started) and so take part in every collective. A request refused before it is sent (409, a malformed
load_model body) never reaches them; one refused while running (a BatchError, a missing checkpoint)
is refused on every rank alike, before any collective, and the followers wait for the next command.

Training (train.Trainer): each rank takes every N-th micro-batch. On CUDA the model is wrapped in
FSDP (bf16 mixed precision when the trainer autocasts) and gradients are reduce-scattered by FSDP; on
CPU (gloo; FSDP does not run on CPU in torch 1.13) every rank keeps the whole model and the
gradients are summed with all_reduce. Either way the aggregation weights were computed over the
whole batch (batch.py), so the summed gradient is the single-process one. Only rank 0 logs and writes
checkpoints.
"""
from __future__ import annotations

import contextlib
import datetime
import functools
import os
import sys
import threading
import traceback
from typing import Any, Dict, Iterator, List, Optional

import torch
import torch.distributed as dist

from ..errors import HttpError

# Followers wait in a broadcast for rank 0's next command through whole rollout phases.
COMMAND_TIMEOUT = datetime.timedelta(days=365)
COMMANDS = ("load_model", "train_step", "save", "load_checkpoint", "shutdown")
FSDP_PREFIX = "_fsdp_wrapped_module."


def world_size() -> int:
    """WORLD_SIZE as torchrun sets it; 1 for a plain `python -m atk_trainer`."""
    return int(os.environ.get("WORLD_SIZE", "1"))


class RankError(RuntimeError):
    """The ranks do not fit the machine (the server prints it as one line and exits 2)."""


def check_ranks(size: int, cuda: bool, gpus: int) -> None:
    """On CUDA every rank needs a GPU of its own (rank r uses cuda:LOCAL_RANK); more ranks than visible
    GPUs would end in an invalid-device CUDA traceback on the first extra rank."""
    if cuda and size > gpus:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        where = f" (CUDA_VISIBLE_DEVICES={visible})" if visible is not None else ""
        raise RankError(
            f"WORLD_SIZE {size} is more than the {gpus} visible GPU{'s' if gpus != 1 else ''}{where}: "
            "start at most one rank per GPU (model.trainer.gpus), or set CUDA_VISIBLE_DEVICES= to train on CPU"
        )


class Peers:
    """This rank's view of the trainer processes: the command channel and the Trainer's collectives."""

    def __init__(self) -> None:
        self.rank = int(os.environ["RANK"])
        self.size = int(os.environ["WORLD_SIZE"])
        check_ranks(self.size, torch.cuda.is_available(), torch.cuda.device_count())
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))  # "cuda" below means this rank's GPU
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        # Commands and small Python objects go over their own CPU group: pickles need no GPU copy, and
        # its timeout outlasts the wait between two commands.
        self.objects = dist.new_group(backend="gloo", timeout=COMMAND_TIMEOUT)
        self._lock = threading.Lock()  # rank 0: one command at a time, sent and run in the same order everywhere

    @property
    def leader(self) -> bool:
        return self.rank == 0

    # -- commands ------------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def command(self, name: str, body: Any) -> Iterator[None]:
        """Rank 0: send the command to the followers, then run it here; followers: just run it."""
        if not self.leader:
            yield
            return
        with self._lock:
            dist.broadcast_object_list([name, body], src=0, group=self.objects)
            yield

    def follow(self, control: Any) -> int:
        """Ranks > 0: run rank 0's commands until it sends shutdown. Only failures nobody else reports
        (not an HttpError, which rank 0 answers too) are printed."""
        while True:
            message: List[Any] = [None, None]
            dist.broadcast_object_list(message, src=0, group=self.objects)
            name, body = message
            if name == "shutdown":
                return 0
            try:
                getattr(control, name)(body)
            except HttpError:
                pass
            except Exception:  # noqa: BLE001 - keep following; rank 0 reports the step's failure
                sys.stderr.write(f"atk_trainer rank {self.rank}: {name} failed\n{traceback.format_exc()}")

    # -- collectives for the Trainer ------------------------------------------------------------------------
    def my_micro_batches(self, count: int) -> List[Optional[int]]:
        """Indices of this rank's micro-batches (every size-th), padded with None to the same number on
        every rank: with FSDP each forward/backward is a collective, so all ranks run as many."""
        rounds = -(-count // self.size)
        mine: List[Optional[int]] = list(range(self.rank, count, self.size))
        return mine + [None] * (rounds - len(mine))

    def check(self, failure: Optional[BaseException]) -> None:
        """Raise on every rank if any rank failed its micro-batches (rank 0 its own error first), so no
        rank goes on into a gradient collective the others will not join."""
        line = None if failure is None else traceback.format_exception_only(type(failure), failure)[-1].strip()
        lines: List[Optional[str]] = [None] * self.size
        dist.all_gather_object(lines, line, group=self.objects)
        if failure is not None:
            raise failure
        failed = [(rank, text) for rank, text in enumerate(lines) if text is not None]
        if failed:
            raise RuntimeError(f"rank {failed[0][0]}: {failed[0][1]}")

    def sum_gradients(self, params: List[torch.nn.Parameter]) -> None:
        """Without FSDP: sum the gradients of all ranks into every rank's (one flat all_reduce)."""
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat)
        offset = 0
        for p, g in zip(params, grads):
            p.grad = flat[offset : offset + g.numel()].view_as(g)
            offset += g.numel()

    def gather_totals(self, totals: Dict[str, float]) -> List[Dict[str, float]]:
        """Every rank's metric totals of the step, in rank order."""
        parts: List[Any] = [None] * self.size
        dist.all_gather_object(parts, totals, group=self.objects)
        return parts

    # -- FSDP (CUDA only) --------------------------------------------------------------------------------------
    def shard(self, module: torch.nn.Module, layer_cls: Optional[type], bf16: bool) -> torch.nn.Module:
        """`module` wrapped in FSDP, one unit per decoder layer, full params kept as original tensors
        (use_orig_params: optimizer groups and LoRA's frozen base need them)."""
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision
        from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

        policy = (
            None
            if layer_cls is None
            else functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={layer_cls})
        )
        precision = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if bf16 else None
        return FSDP(
            module,
            auto_wrap_policy=policy,
            mixed_precision=precision,
            device_id=torch.cuda.current_device(),
            use_orig_params=True,
        )

    def refresh_serving(self, sharded: torch.nn.Module, serving: Optional[torch.nn.Module]) -> None:
        """After a step (and a checkpoint load), rank 0's unsharded serving copy - the module the embedded
        engine samples from and save() writes - gets the new weights: summon_full_params all-gathers the
        shards (rank0_only, so the other ranks build no full copy) and rank 0 copies them by name."""
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        with FSDP.summon_full_params(sharded, writeback=False, rank0_only=True), torch.no_grad():
            if self.leader and serving is not None:
                own = dict(serving.named_parameters())
                for name, p in sharded.named_parameters():
                    own[clean_name(name)].copy_(p)

    def load_sharded(self, sharded: torch.nn.Module, serving: Optional[torch.nn.Module]) -> None:
        """The reverse, for load_checkpoint: rank 0 read the checkpoint into its serving copy; every rank's
        shard takes those weights (full params summoned on every rank, rank 0's broadcast, written back)."""
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        with FSDP.summon_full_params(sharded, writeback=True), torch.no_grad():
            own = dict(serving.named_parameters()) if self.leader and serving is not None else {}
            for name, p in sharded.named_parameters():
                if own:
                    p.copy_(own[clean_name(name)])
                dist.broadcast(p.data, src=0)

    def full_optimizer_state(self, sharded: torch.nn.Module, optimizer: torch.optim.Optimizer) -> Dict[str, Any]:
        """The optimizer state of all shards, complete on rank 0 (a collective: every rank calls it)."""
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        return FSDP.full_optim_state_dict(sharded, optimizer, rank0_only=True)

    def shard_optimizer_state(
        self, sharded: torch.nn.Module, state: Dict[str, Any], optimizer: torch.optim.Optimizer
    ) -> Dict[str, Any]:
        """This rank's part of a full optimizer state read from a checkpoint (keyed by the optimizer's own
        parameters, not by model.parameters() order)."""
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        return FSDP.shard_full_optim_state_dict(state, sharded, optim=optimizer)


def clean_name(name: str) -> str:
    """A parameter's name in the unwrapped model."""
    return name.replace(FSDP_PREFIX, "")
