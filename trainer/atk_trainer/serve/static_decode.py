"""The built-in decoder's decode step with static shapes, and its CUDA graphs.

The dynamic step (KVCache.begin) slices the cache to the `used` slots and the batch to its rows: Python
ints that change every step, so every step launches its ~1,300 kernels (0.5B model) anew, and on a GPU
the step is launch overhead. This step runs the same model over shapes fixed by (bucket, capacity):
- the batch padded to a bucket (1, 2, 4, then multiples of 8, as vLLM captures); padding rows are fed
  token 0 at position 0, write into cache rows no sequence uses, and attend only to their own new slot;
- every slot of the cache's capacity (allocated at prefill for the prompts and their token budget),
  masked by `valid`; the slot the step writes, the positions and which rows are fed are tensors.
Nothing inside `StaticDecodeStep.forward` reads a host value, so on CUDA it is captured once per bucket
with torch.cuda.CUDAGraph and replayed (CudaGraphs). A graph reads the cache by address: graphs are
kept while the cache's storage stays where it is (KVCache grows rarely and compacts in place) and
captured again when it moves. Without capture the same step runs eagerly (the tests run it so on CPU);
when capture fails or torch has no graphs, one line is logged and the decoder goes back to the dynamic
step.

Reading every slot up to capacity instead of up to `used` costs attention work (at most the prompt
plus the whole budget against what is written so far); on a GPU the launches it saves cost more.
"""
from __future__ import annotations

import inspect
from typing import Any, Dict, List, Optional, Tuple

import torch

from ..log import log
from .kv_cache import KVCache

ALIGNMENT = 8  # buckets past 4 rows are multiples of this (vLLM's _BATCH_SIZE_ALIGNMENT)
DECODE_STEPS = ("dynamic", "static", "graphs")


def decode_step_for(device: torch.device, cuda_graphs: bool) -> str:
    """The engine's decode step: CUDA graphs on a CUDA device when asked, else today's dynamic step
    (on CPU the static step only adds padding and masked slots: nothing to save there)."""
    return "graphs" if cuda_graphs and device.type == "cuda" else "dynamic"


def bucket(rows: int) -> int:
    """The padded batch a step of `rows` rows runs at: 1, 2, 4, 8, 16, 24, ..."""
    if rows <= 2:
        return max(rows, 1)
    if rows <= 4:
        return 4
    return -(-rows // ALIGNMENT) * ALIGNMENT


class StaticDecodeStep:
    """One decode step over a KVCache at static shapes; `capture` replays it as CUDA graphs."""

    def __init__(self, module: Any, capture: bool = False):
        self.module = module
        self.graphs = CudaGraphs.create(_device(module)) if capture else None
        # False once graphs were asked for and cannot run: the decoder then takes the dynamic step,
        # which reads only the slots in use (this step run eagerly would read them all for nothing).
        self.enabled = not capture or self.graphs is not None

    def run(self, cache: KVCache, live: List[int], tokens: List[int], lengths: torch.Tensor) -> torch.Tensor:
        """Feed tokens[i] to cache row live[i] at position lengths[row]; (len(live), V) logits."""
        rows, b = cache.rows, bucket(cache.rows)
        cache.reserve_rows(b)
        slot = cache.advance()  # host bookkeeping: the step itself only sees the slot as a tensor
        index = torch.tensor(live, dtype=torch.long)
        # One host-to-device copy per step: [ids (b) | positions (b) | fed (b) | slot | live rows].
        host = torch.zeros(3 * b + 1 + len(live), dtype=torch.long)
        host[index] = torch.tensor(tokens, dtype=torch.long)
        host[b : b + rows] = lengths
        host[2 * b + index] = 1
        host[3 * b] = slot
        host[3 * b + 1 :] = index
        packed = host.to(self.module.lm_head.weight.device)
        inputs = packed[: 3 * b + 1]
        graphs = self.graphs
        logits = graphs.run(self, cache, b, inputs) if graphs is not None else self.forward(cache, b, inputs)
        # A copy: a graph's output is overwritten by its next replay.
        return logits.index_select(0, packed[3 * b + 1 :])

    def forward(self, cache: Any, b: int, inputs: torch.Tensor) -> torch.Tensor:
        """The step proper: (b, V) logits from inputs (3b + 1,) = [ids | positions | fed | slot]. Reads
        only `cache.keys`, `cache.values` and `cache.valid`, never a host-side count (what a graph replays)."""
        ids, positions = inputs[:b].view(b, 1), inputs[b : 2 * b].view(b, 1)
        fed, slot = inputs[2 * b : 3 * b].view(b, 1).bool(), inputs[3 * b :]
        return self.module(ids, positions, _StepCache(cache, b, slot, fed))[:, -1]

    def disable_graphs(self, reason: str) -> None:
        self.graphs, self.enabled = None, False
        _log_graphs_off(reason)


def _device(module: Any) -> torch.device:
    return next(module.parameters()).device


def _log_graphs_off(reason: str) -> None:
    log(f"CUDA graphs off ({reason}); the engine decodes eagerly")


class _StepCache:
    """What DecoderModel.forward asks of a cache (AttentionCache: begin, layer, recent) for one static step of `b` rows:
    every index a tensor, every shape fixed by (b, the cache's capacity)."""

    def __init__(self, cache: Any, b: int, slot: torch.Tensor, fed: torch.Tensor):
        self.keys = [k[:b] for k in cache.keys]  # (b, Hkv, capacity, D) views of the storage
        self.values = [v[:b] for v in cache.values]
        self.valid = cache.valid[:b]  # (b, capacity)
        self.slot, self.fed = slot, fed  # (1,) long; (b, 1) bool

    def begin(self, input_ids: torch.Tensor, new_valid: Optional[torch.Tensor]) -> torch.Tensor:
        """Mark the fed rows' new slot valid; the mask (b, 1, 1, capacity): valid slots plus the new
        slot of every row (a padding row attends to itself only, so no row is all -inf)."""
        self.valid.index_copy_(1, self.slot, self.fed)
        slots = torch.arange(self.valid.shape[1], device=self.valid.device)
        mask = self.valid | (slots == self.slot).unsqueeze(0)
        return mask.view(self.valid.shape[0], 1, 1, -1)

    def recent(self, window: int) -> torch.Tensor:
        """(b, 1, 1, capacity): slots holding each row's last `window` real tokens (see KVCache.recent)."""
        seen = self.valid.long().cumsum(-1)  # (b, S)
        distance = seen.index_select(1, self.slot) - seen
        return (distance < window).view(self.valid.shape[0], 1, 1, -1)

    def layer(self, i: int) -> "_StepLayer":
        return _StepLayer(self, i)


class _StepLayer:
    def __init__(self, cache: _StepCache, i: int):
        self.cache, self.i = cache, i

    def append(self, k: torch.Tensor, v: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:  # (b, Hkv, 1, D) each
        c = self.cache
        keys, values = c.keys[self.i], c.values[self.i]
        keys.index_copy_(2, c.slot, k.to(keys.dtype))
        values.index_copy_(2, c.slot, v.to(values.dtype))
        return keys, values  # (b, Hkv, capacity, D)


# Capture tolerates CUDA calls of other threads (an adapter's engine, HTTP handlers) where torch allows it.
_graph = getattr(torch.cuda, "graph", None)  # absent from old torch: CudaGraphs.create says so
_THREAD_LOCAL = (
    {"capture_error_mode": "thread_local"}
    if _graph and "capture_error_mode" in inspect.signature(_graph).parameters
    else {}
)


class CudaGraphs:
    """The static step captured once per bucket and replayed (CUDA only), as vLLM's CUDAGraphRunner:
    a bucket's steps run eagerly (which also warms up the kernels) until its second one, which is then
    captured with its input buffer; later steps copy their inputs into that buffer and replay. A batch
    that grows through a bucket in one step costs no capture. Graphs share one memory pool: safe
    because each replay's logits are copied out before the next replay."""

    CAPTURE_AT = 2  # the step of a bucket (on one cache storage) that is captured

    def __init__(self) -> None:
        self.graphs: Dict[int, Tuple[Any, torch.Tensor, torch.Tensor]] = {}  # bucket -> (graph, inputs, logits)
        self.steps: Dict[int, int] = {}  # bucket -> eager steps run on this storage
        self.storage: Optional[tuple] = None  # where the cache the graphs read lives
        self.pool: Any = None

    @staticmethod
    def create(device: torch.device) -> Optional["CudaGraphs"]:
        if not hasattr(torch.cuda, "CUDAGraph") or not hasattr(torch.cuda, "graph"):
            _log_graphs_off(f"torch {torch.__version__} has no torch.cuda.graph")
            return None
        if device.type != "cuda":  # with CUDA present, a CPU model's capture "succeeds" empty and replays nothing
            _log_graphs_off(f"the model is on {device.type}, graphs capture CUDA work only")
            return None
        return CudaGraphs()

    def run(self, step: StaticDecodeStep, cache: KVCache, b: int, inputs: torch.Tensor) -> torch.Tensor:
        storage = (
            cache.valid.data_ptr(),
            cache.capacity,
            cache.row_capacity,
            tuple(t.data_ptr() for t in cache.keys + cache.values),
        )
        if storage != self.storage:
            self.graphs, self.steps, self.storage, self.pool = {}, {}, storage, None
        entry = self.graphs.get(b)
        if entry is not None:
            graph, buffer, logits = entry
            buffer.copy_(inputs)
            graph.replay()
            return logits
        logits = step.forward(cache, b, inputs)  # this step's result; nothing below runs kernels
        self.steps[b] = self.steps.get(b, 0) + 1
        if self.steps[b] < self.CAPTURE_AT:
            return logits
        try:
            buffer = inputs.clone()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self.pool, **_THREAD_LOCAL):
                captured = step.forward(cache, b, buffer)
            self.pool = graph.pool()
            self.graphs[b] = (graph, buffer, captured)
        except Exception as e:  # noqa: BLE001 - any capture failure falls back to the eager step
            step.disable_graphs(f"capture failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        return logits
