"""A torch.distributed group between trainer rank 0 and every engine worker, for full-weight syncs
without a shared disk: the trainer broadcasts each tensor in the dtype the engine serves, the
workers receive it straight into the served model's `load_weights` (vllm_worker.WeightReload).

The group is built from torch's c10d classes on its own TCPStore, not with init_process_group, so it
touches neither torchrun's default group on the trainer side nor vLLM's own groups on the engine side
(the stateless-group pattern of TRL, verl, OpenRLHF and prime-rl). Ranks: the trainer is 0, replica
workers follow it (atk gives each replica a rank offset; a worker adds its rank inside the replica).
Gloo carries CPU tensors; NCCL, chosen when the trainer's weights are on CUDA, carries CUDA tensors.
Every collective has the group's timeout, so a peer that died fails the sync instead of hanging it.

The wire format is a manifest of [name, dtype, shape] triples the trainer sends through atk, then one
broadcast per tensor in manifest order. This module is imported inside vLLM's workers too: torch only.
"""
from __future__ import annotations

import socket
from datetime import timedelta
from typing import Any, Iterable, Iterator, List, Sequence, Tuple

import torch
import torch.distributed as dist

TensorSpec = Tuple[str, str, List[int]]  # [name, dtype without "torch.", shape] as JSON carries it
BACKENDS = ("gloo", "nccl")


def open_store(host: str, timeout_s: float) -> dist.TCPStore:
    """The group's rendezvous store, served by the trainer on `host` at a free port (`store.port`)."""
    return dist.TCPStore(host, 0, None, True, timedelta(seconds=timeout_s), wait_for_workers=False)


def join_group(store: Any, rank: int, world_size: int, backend: str, master_addr: str, timeout_s: float) -> Any:
    """This process's member of the group; blocks until all `world_size` members joined (or the timeout).
    @raises ValueError for an unknown backend or NCCL without CUDA; RuntimeError when the rendezvous times out."""
    if backend not in BACKENDS:
        raise ValueError(f"backend: one of {', '.join(BACKENDS)}, got {backend!r}")
    timeout = timedelta(seconds=timeout_s)
    prefixed = dist.PrefixStore("atk-weights", store)
    if backend == "nccl" and not torch.cuda.is_available():
        raise ValueError("backend nccl: this process has no CUDA device")
    try:
        return _member(prefixed, rank, world_size, backend, master_addr, timeout)
    except RuntimeError as e:  # torch 2.x raises DistStoreError (a RuntimeError) naming only a store key
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise RuntimeError(
            f"weight sync group: not all {world_size} members joined within {timeout_s:g} s "
            f"(the trainer and every engine worker must join; {first})"
        ) from e


def _member(prefixed: Any, rank: int, world_size: int, backend: str, master_addr: str, timeout: timedelta) -> Any:
    if backend == "nccl":
        options = dist.ProcessGroupNCCL.Options()
        options._timeout = timeout
        return dist.ProcessGroupNCCL(prefixed, rank, world_size, options)
    options = dist.ProcessGroupGloo._Options()
    options._timeout = timeout
    # The address this host reaches the trainer from: gloo's default (the host name's address) may be
    # one the other members cannot reach, or loopback on a multi-host setup.
    options._devices = [dist.ProcessGroupGloo.create_device(hostname=_local_address(master_addr))]
    return dist.ProcessGroupGloo(prefixed, rank, world_size, options)


def connect_store(master_addr: str, port: int, timeout_s: float) -> dist.TCPStore:
    """A worker's client of the trainer's store."""
    return dist.TCPStore(master_addr, port, None, False, timedelta(seconds=timeout_s))


def manifest(tensors: Iterable[Tuple[str, torch.Tensor]]) -> List[TensorSpec]:
    return [(name, str(t.dtype).replace("torch.", ""), list(t.shape)) for name, t in tensors]


def send(group: Any, tensors: Iterable[Tuple[str, torch.Tensor]], device: torch.device) -> Tuple[int, int]:
    """Broadcast every tensor from rank 0, in order; returns (tensors, bytes)."""
    count = nbytes = 0
    for _name, tensor in tensors:
        wire = tensor.detach().to(device).contiguous()
        _broadcast(group, wire)
        count += 1
        nbytes += wire.numel() * wire.element_size()
    return count, nbytes


def receive(group: Any, specs: Sequence[Sequence[Any]], device: torch.device) -> Iterator[Tuple[str, torch.Tensor]]:
    """(name, tensor) for each spec, as rank 0 broadcasts it; lazily, so a consumer loads one at a time."""
    for name, dtype, shape in specs:
        tensor = torch.empty([int(n) for n in shape], dtype=_dtype(dtype), device=device)
        _broadcast(group, tensor)
        yield name, tensor


def drain(group: Any, specs: Sequence[Sequence[Any]], device: torch.device) -> None:
    """Take part in the broadcasts of `specs` without keeping them: after a receiver failed midway the
    sender still sends the rest, and the collective must stay in step until it ends."""
    for _ in receive(group, specs, device):
        pass


def _broadcast(group: Any, tensor: torch.Tensor) -> None:
    # Over gloo every tensor travels as its bytes: gloo has no bfloat16 (nor int16), and a broadcast is a
    # bitwise copy anyway. NCCL takes every dtype the engine serves as it is.
    wire = tensor.reshape(-1).view(torch.uint8) if isinstance(group, dist.ProcessGroupGloo) else tensor
    options = dist.BroadcastOptions()
    options.rootRank = 0
    group.broadcast([wire], options).wait()


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, str(name), None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"weight manifest: unknown dtype {name!r}")
    return dtype


def _local_address(peer: str) -> str:
    """This host's address on the route to `peer` (no packet is sent: a UDP connect only picks the route)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((peer, 9))
        return s.getsockname()[0]
