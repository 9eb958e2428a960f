"""Full-weight sync into vLLM: a worker extension atk starts vLLM with, and calls over HTTP.

    vllm serve <model> --worker-extension-cls atk_trainer.vllm_worker.WeightReload
    (with PYTHONPATH=<atk>/trainer and VLLM_SERVER_DEV_MODE=1, which registers /collective_rpc)

    POST /collective_rpc {"method": "atk_reload_weights", "args": ["/abs/checkpoint/dir", "policy@7"]}
    POST /collective_rpc {"method": "atk_weight_version"}   -> {"results": ["policy@7", ...]} (one per worker)

Without a shared disk the weights come over a torch.distributed group instead (weight_group.py):
    POST /collective_rpc {"method": "atk_join_weight_group", "args": [addr, port, rank_offset, world_size, "gloo", 300]}
    POST /collective_rpc {"method": "atk_receive_weights", "args": [[[name, dtype, shape], ...], "policy@7"]}
while the trainer's /control/weights/join and /control/weights/send run the other end.

vLLM 0.10-0.15 has no HTTP route that reloads weights from a directory, and its later weight-transfer
API needs the trainer inside vLLM's NCCL group. A worker extension is the pattern TRL, verl and
prime-rl use instead (../shared/notes/engines.md §2.4): vLLM mixes the class into every GPU worker, so
each tensor-parallel rank streams the HF-layout checkpoint through the model's own `load_weights`,
which shards it as it did at start-up. This module is imported inside vLLM's workers, so it needs
nothing but torch and atk_trainer.model.safetensors_io (no `safetensors` or `vllm` import at module level).

StandinWorker is what the embedded engine offers in place of vLLM's worker, so the same extension
runs against real weights on machines without vLLM (engine_api.EngineApi.use_worker_extension).
"""
from __future__ import annotations

import glob
import os
from typing import Any, Iterable, Iterator, List, Optional, Set, Tuple

import torch

from ..model.safetensors_io import iter_dir
from . import weight_group


class WeightReload:
    """Methods vLLM's worker gains from --worker-extension-cls; `self` is the worker (model_runner...)."""

    def atk_reload_weights(self, directory: str, version: str) -> str:
        """Load every tensor of the HF checkpoint in `directory` into the served model; returns `version`,
        which atk_weight_version reports from then on. Prefix-cache entries computed by the old weights
        must be dropped by the caller (POST /reset_prefix_cache)."""
        return self._atk_load(checkpoint_weights(directory), directory, version)

    def atk_join_weight_group(
        self, master_addr: str, port: int, rank_offset: int, world_size: int, backend: str, timeout_s: float
    ) -> int:
        """Join trainer rank 0's weight group (weight_group.py) as rank `rank_offset` + this worker's rank
        in its replica; blocks until every member joined. Returns the rank."""
        rank = int(rank_offset) + int(getattr(self, "rank", 0))
        store = weight_group.connect_store(master_addr, int(port), float(timeout_s))
        self._atk_group = weight_group.join_group(store, rank, int(world_size), backend, master_addr, float(timeout_s))
        self._atk_group_device = _served_device(self.model_runner) if backend == "nccl" else torch.device("cpu")
        return rank

    def atk_receive_weights(self, specs: List[List[Any]], version: str) -> str:
        """Load the tensors trainer rank 0 broadcasts, in the order of `specs` ([name, dtype, shape] each),
        into the served model as they arrive; returns `version` (as atk_reload_weights)."""
        group = getattr(self, "_atk_group", None)
        if group is None:
            raise ValueError("no weight group: call atk_join_weight_group first")
        taken = []  # how many broadcasts the model consumed, to stay in step with the sender if it fails

        def arriving() -> Iterator[Tuple[str, torch.Tensor]]:
            for pair in weight_group.receive(group, specs, self._atk_group_device):
                taken.append(pair[0])
                yield pair

        try:
            return self._atk_load(arriving(), "the broadcast weights", version)
        except Exception:
            weight_group.drain(group, specs[len(taken) :], self._atk_group_device)
            raise

    def atk_weight_version(self) -> Optional[str]:
        """The version of the last reload; None while the weights are those vLLM started with."""
        return getattr(self, "_atk_weight_version", None)

    def _atk_load(self, weights: Iterable[Tuple[str, torch.Tensor]], source: str, version: str) -> str:
        model = _served_model(self.model_runner)
        loaded = model.load_weights(weights)
        # vLLM's own loader refuses a checkpoint that leaves parameters unset; so does this, or a partial
        # reload would report the new version. The weights it did load stay (vLLM copies as it streams):
        # the version is not advanced, so atk's check fails the sync and the run stops on it.
        if loaded is not None:
            missing = sorted({name for name, _ in model.named_parameters()} - set(loaded))
            if missing:
                some = ", ".join(missing[:3])
                raise ValueError(f"{source}: the checkpoint has no weights for {len(missing)} parameters ({some}, ...)")
        _process_weights_after_loading(model, self.model_runner)
        self._atk_weight_version = version
        return version


def checkpoint_weights(directory: str) -> Iterator[Tuple[str, torch.Tensor]]:
    """(name, tensor) for every weight of the HF checkpoint in `directory`, read one tensor at a time
    (every tensor-parallel worker reads the whole checkpoint; a whole file at once would be its size per worker).
    @raises FileNotFoundError when the directory holds no safetensors file."""
    if not glob.glob(os.path.join(directory, "*.safetensors")):
        raise FileNotFoundError(f"{directory}: no *.safetensors checkpoint to reload")
    return iter_dir(directory)


def _served_model(runner: Any) -> Any:
    model = runner.get_model() if hasattr(runner, "get_model") else runner.model
    # With CUDA graphs the runner holds a wrapper whose `runnable` is the model.
    return getattr(model, "runnable", model)


def _served_device(runner: Any) -> torch.device:
    return next(_served_model(runner).parameters()).device


def _process_weights_after_loading(model: Any, runner: Any) -> None:
    """vLLM's post-load hook (repacking for quantized layers; a no-op for plain bf16 weights)."""
    if not isinstance(model, torch.nn.Module):
        return  # the stand-in's model (StandinWorker), also where vllm happens to be importable
    try:
        from vllm.model_executor.model_loader.utils import process_weights_after_loading  # type: ignore
    except ImportError:
        return  # not inside vLLM (the stand-in), or a vLLM that moved it: plain weights need nothing
    device = next(model.parameters()).device
    process_weights_after_loading(model, runner.model_config, device)


class StandinWorker:
    """The part of vLLM's GPU worker an extension uses: `model_runner.model.load_weights(weights)`,
    here over the embedded engine's policy. The weights change with no request running, which is
    stricter than vLLM: there a collective_rpc runs between scheduler steps, and requests in flight go
    on with the new weights over KV computed by the old ones. atk syncs between rollouts, so neither
    has requests in flight."""

    def __init__(self, engine: Any):
        self.model_runner = _StandinRunner(engine)


class _StandinRunner:
    def __init__(self, engine: Any):
        self.model = _StandinModel(engine)
        self.model_config = None


class _StandinModel:
    def __init__(self, engine: Any):
        self.engine = engine

    def parameters(self) -> Iterator[torch.nn.Parameter]:
        return self.engine.policy.module.parameters()

    def named_parameters(self) -> Iterator[Tuple[str, torch.nn.Parameter]]:
        return self.engine.policy.module.named_parameters()

    def load_weights(self, weights: Iterable[Tuple[str, torch.Tensor]]) -> Set[str]:
        """Copy checkpoint tensors into the served module by name, as vLLM models do; an unknown name or
        a wrong shape raises (vLLM raises KeyError) and nothing is half-loaded."""
        state = self.engine.policy.module.state_dict()
        staged = {}
        for name, tensor in weights:
            if name not in state:
                raise KeyError(f"checkpoint tensor {name!r} is not a parameter of the served model")
            if tensor.shape != state[name].shape:
                raise ValueError(
                    f"checkpoint tensor {name!r} has shape {tuple(tensor.shape)}, "
                    f"the model's is {tuple(state[name].shape)}"
                )
            staged[name] = tensor
        with self.engine.exclusive(), torch.no_grad():  # leaving it also drops the engine's prefix cache
            for name, tensor in staged.items():
                state[name].copy_(tensor)
        return set(staged)
