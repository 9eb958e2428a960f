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
prime-rl use instead (../shared/notes/engines.md §2.4): vLLM mixes the class into every worker, so
each tensor-parallel rank streams the HF-layout checkpoint into the served model, which shards it as it
did at start-up. Where the worker offers vLLM's own in-place reload (`reload_weights(...,
is_checkpoint_format=True)`, vLLM >= 0.16) that is the path: it restores each layer's checkpoint-format
parameters, loads them through the model's `load_weights` and re-runs the layer's post-load processing.
Plain `load_weights` cannot do that where processing replaced a parameter, as vLLM's CPU backend does:
it packs every linear layer's weight for oneDNN and leaves an empty parameter behind. Two things the
reload path leaves to its caller, this module does:
- a tied output embedding (lm_head sharing embed_tokens' weight) is never loaded itself, so its own
  processed copy (the CPU backend's packed matrix for the logits) would keep the old weights: every module
  sharing a weight is processed again after the reload;
- vLLM only logs the parameters a checkpoint did not fill; atk refuses such a checkpoint, before loading
  when the served model's own files name tensors the new checkpoint lacks, and after loading otherwise.
This module is imported inside vLLM's workers, so it needs nothing but torch and
atk_trainer.model.safetensors_io (no `safetensors` or `vllm` import at module level).

StandinWorker is what the embedded engine offers in place of vLLM's worker, so the same extension
runs against real weights on machines without vLLM (engine_api.EngineApi.use_worker_extension).
"""
from __future__ import annotations

import glob
import os
from typing import Any, Iterable, Iterator, List, Optional, Set, Tuple

import torch

from ..model.safetensors_io import iter_dir, tensor_names
from . import weight_group


class WeightReload:
    """Methods vLLM's worker gains from --worker-extension-cls; `self` is the worker (model_runner...)."""

    def atk_reload_weights(self, directory: str, version: str) -> str:
        """Load every tensor of the HF checkpoint in `directory` into the served model; returns `version`,
        which atk_weight_version reports from then on. Prefix-cache entries computed by the old weights
        must be dropped by the caller (POST /reset_prefix_cache).
        @raises ValueError naming the tensors the checkpoint lacks, before anything is loaded."""
        weights = checkpoint_weights(directory)
        _refuse_partial(tensor_names(directory), _served_checkpoint(self), directory)
        return self._atk_load(weights, directory, version)

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
            _refuse_partial([spec[0] for spec in specs], _served_checkpoint(self), "the broadcast weights")
            return self._atk_load(arriving(), "the broadcast weights", version)
        except Exception:
            weight_group.drain(group, specs[len(taken) :], self._atk_group_device)
            raise

    def atk_torch_version(self) -> str:
        """This worker's torch: a weight group's members must share it (weight_group.py). A plain str:
        vLLM's RPC cannot serialize torch's TorchVersion (the call then never answers)."""
        return str(torch.__version__)

    def atk_weight_version(self) -> Optional[str]:
        """The version of the last reload; None while the weights are those vLLM started with."""
        return getattr(self, "_atk_weight_version", None)

    def _atk_load(self, weights: Iterable[Tuple[str, torch.Tensor]], source: str, version: str) -> str:
        model = _served_model(self.model_runner)
        if callable(getattr(self, "reload_weights", None)) and isinstance(model, torch.nn.Module):
            loaded = _reload_in_place(self, weights)
        else:  # a vLLM without the in-place reload, or the stand-in
            loaded = model.load_weights(weights)
            _process_weights_after_loading(model, self.model_runner)
        # A partial reload must not report the new version. The weights it did load stay (vLLM copies as
        # it streams): the version is not advanced, so atk's check fails the sync and the run stops on it.
        if loaded is not None:
            missing = sorted({name for name, _ in model.named_parameters()} - set(loaded))
            if missing:
                some = ", ".join(missing[:3])
                raise ValueError(f"{source}: the checkpoint has no weights for {len(missing)} parameters ({some}, ...)")
        self._atk_weight_version = version
        return version


def checkpoint_weights(directory: str) -> Iterator[Tuple[str, torch.Tensor]]:
    """(name, tensor) for every weight of the HF checkpoint in `directory`, read one tensor at a time
    (every tensor-parallel worker reads the whole checkpoint; a whole file at once would be its size per worker).
    @raises FileNotFoundError when the directory holds no safetensors file."""
    if not glob.glob(os.path.join(directory, "*.safetensors")):
        raise FileNotFoundError(f"{directory}: no *.safetensors checkpoint to reload")
    return iter_dir(directory)


def _reload_in_place(worker: Any, weights: Iterable[Tuple[str, torch.Tensor]]) -> Optional[Set[str]]:
    """vLLM's in-place reload of checkpoint-format weights; returns the parameter names the model's
    `load_weights` reports loaded (vLLM's reload only logs the others), None when it reports none."""
    model = worker.model_runner.get_model()  # the object vLLM's reload loads into
    reported: List[Optional[Set[str]]] = []
    load_weights = model.load_weights

    def reporting_load(stream: Iterable[Tuple[str, torch.Tensor]]) -> Any:
        loaded = load_weights(stream)
        reported.append(None if loaded is None else set(loaded))
        return loaded

    model.load_weights = reporting_load  # shadows the class's method for this one reload
    try:
        worker.reload_weights(weights_iterator=weights, is_checkpoint_format=True)
    finally:
        del model.load_weights
    _process_tied(model)
    return reported[0] if reported else None


def _process_tied(model: torch.nn.Module) -> None:
    """Re-runs the post-load processing of every module whose weight another module shares (a tied
    lm_head): only the module that owns the name in the checkpoint was loaded and processed."""
    sharing: dict = {}
    for module in model.modules():
        weight = module._parameters.get("weight")
        if weight is not None:
            sharing.setdefault(id(weight), []).append(module)
    with torch.no_grad():
        for modules in sharing.values():
            if len(modules) < 2:
                continue
            for module in modules:
                method = getattr(module, "quant_method", None)
                if method is not None and hasattr(method, "process_weights_after_loading"):
                    method.process_weights_after_loading(module)


def _served_checkpoint(worker: Any) -> Optional[List[str]]:
    """The tensor names of the checkpoint the served model was started from, where that is a local
    directory (vLLM's model_config.model); None otherwise (a hub id, or the stand-in)."""
    config = getattr(worker.model_runner, "model_config", None)
    directory = getattr(config, "model", None)
    if not isinstance(directory, str) or not os.path.isdir(directory):
        return None
    try:
        return tensor_names(directory)
    except (FileNotFoundError, ValueError):
        return None


def _refuse_partial(names: Iterable[str], served: Optional[List[str]], source: str) -> None:
    """@raises ValueError when `names` lacks tensors of the checkpoint the model was started from."""
    if served is None:
        return
    missing = sorted(set(served) - set(names))
    if missing:
        some = ", ".join(missing[:3])
        raise ValueError(
            f"{source}: the checkpoint lacks {len(missing)} of the {len(served)} tensors the served model "
            f"was loaded from ({some}{', ...' if len(missing) > 3 else ''}); nothing was loaded"
        )


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
