"""The trainer's end of a full-weight broadcast (weight_group.py); atk drives both ends:

    POST /control/weights/open {"master_addr": "10.0.0.5", "dtype": "bfloat16", "timeout_s": 300}
        -> {"port", "backend", "tensors": [[name, dtype, shape], ...], "bytes", "torch"}
           (a rendezvous store on a free port here; master_addr: this host as the engines reach it)
    POST /control/weights/join {"world_size": 1 + engine workers}   (with every worker's atk_join_weight_group)
    POST /control/weights/send {}  -> {"tensors", "bytes", "seconds"}   (with every worker's atk_receive_weights)

Only rank 0 sends: its `policy` holds the whole weights (with FSDP, the serving copy refreshed after
every step), so the other trainer ranks take no part.
"""
from __future__ import annotations

import time
from typing import Any, Optional, TypedDict

import torch

from ..errors import HttpError, bad_request, expect_object
from ..train import sync_fault
from . import weight_group
from .control import SAVE_DTYPES, ControlApi
from .wire import Body, Json


class OpenReply(TypedDict):
    port: int
    backend: str
    tensors: Json
    bytes: int
    torch: str  # this trainer's torch: the workers must run the same to join its group


class SendReply(TypedDict):
    tensors: int
    bytes: int
    seconds: float


class WeightSendApi:
    def __init__(self, control: ControlApi, host: str):
        self.control = control
        self.host = host
        self.master_addr = host
        self.store: Optional[Any] = None
        self.group: Optional[Any] = None
        self.dtype: Any = None
        self.timeout_s = 300.0

    def open(self, body: Body) -> OpenReply:
        body = expect_object(body)
        trainer = self.control._trainer()
        dtype, timeout_s, master_addr = (
            body.get("dtype"),
            body.get("timeout_s", 300),
            body.get("master_addr", self.host),
        )
        if not isinstance(master_addr, str) or not master_addr:
            raise bad_request(f"master_addr: expected this host's address, got {master_addr!r}")
        if dtype is not None and dtype not in SAVE_DTYPES:
            raise bad_request(f"dtype: one of {', '.join(SAVE_DTYPES)}, got {dtype!r}")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or timeout_s <= 0:
            raise bad_request(f"timeout_s: expected a positive number, got {timeout_s!r}")
        if trainer.config.lora is not None:
            raise bad_request("a weight broadcast sends full weights; this trainer trains a LoRA adapter")
        self.dtype, self.timeout_s, self.master_addr = (
            None if dtype is None else SAVE_DTYPES[dtype],
            float(timeout_s),
            master_addr,
        )
        self.group = None
        self.store = weight_group.open_store(master_addr, self.timeout_s)
        specs = weight_group.manifest(trainer.policy.serving_weights(self.dtype))
        nbytes = sum(_numel(shape) * _element_size(d) for _n, d, shape in specs)
        return {
            "port": self.store.port,
            "backend": self._backend(),
            "tensors": specs,
            "bytes": nbytes,
            "torch": str(torch.__version__),
        }

    def join(self, body: Body) -> Json:
        world_size = expect_object(body).get("world_size")
        if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 2:
            raise bad_request(
                f"world_size: expected an integer >= 2 (the trainer and its engine workers), got {world_size!r}"
            )
        if self.store is None:
            raise HttpError(409, "no weight store: POST /control/weights/open first", "ConflictError")
        self.group = weight_group.join_group(
            self.store, 0, world_size, self._backend(), self.master_addr, self.timeout_s
        )
        return {"rank": 0, "world_size": world_size}

    def send(self, _body: Body) -> SendReply:
        trainer = self.control._trainer()
        if self.group is None:
            raise HttpError(409, "no weight group: POST /control/weights/join first", "ConflictError")
        started = time.perf_counter()
        device = trainer.policy.device if self._backend() == "nccl" else "cpu"
        with self.control.engine.exclusive():  # no train step changes the weights while they go out
            weights = sync_fault.planted_weights(trainer.stale_layer, trainer.policy.serving_weights(self.dtype))
            count, nbytes = weight_group.send(self.group, weights, device)
        return {"tensors": count, "bytes": nbytes, "seconds": time.perf_counter() - started}

    def _backend(self) -> str:
        return "nccl" if self.control._trainer().policy.device.type == "cuda" else "gloo"


def _numel(shape: Any) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _element_size(dtype: str) -> int:
    return torch.empty((), dtype=getattr(torch, dtype)).element_size()
