"""The running rows' sampling settings as device tensors, and one sampling step for all of them.

The engine's rows change only when sequences join or leave, so their settings (temperature, top-k,
top-p, seed) are tensors built then, not every step; each step is a few batched kernels
(processed_logprobs, sample, gather, topk) and one host synchronisation: a single copy to the host
of the sampled ids, their logprobs and the top logprobs asked for.
"""
from __future__ import annotations

from typing import List, NamedTuple

import torch

from .sampling import LOGPROB_FLOOR, processed_logprobs, sample
from .sampling_params import SamplingParams


class Sampled(NamedTuple):
    tokens: List[int]  # per row
    logprobs: List[float]  # of each sampled token, floored at LOGPROB_FLOOR
    top_ids: List[List[int]]  # per row, the most likely tokens (as many as the most any row asked; [] if none)
    top_logprobs: List[List[float]]


class RowSampling:
    """Settings of the running rows, in the engine's row order."""

    def __init__(self) -> None:
        self.params: List[SamplingParams] = []
        self.temperature = self.top_k = self.top_p = self.seeds = self.steps = torch.zeros(0)

    def join(self, params: List[SamplingParams], seeds: List[int], device: torch.device) -> None:
        """Append rows (their sequences have sampled nothing yet)."""

        def cat(old: torch.Tensor, values: list, dtype: torch.dtype) -> torch.Tensor:
            new = torch.tensor(values, dtype=dtype, device=device)
            return new if not self.params else torch.cat([old, new])

        n = len(params)
        self.temperature = cat(self.temperature, [p.temperature for p in params], torch.float32)
        self.top_k = cat(self.top_k, [p.top_k for p in params], torch.long)
        self.top_p = cat(self.top_p, [p.top_p for p in params], torch.float32)
        self.seeds = cat(self.seeds, seeds, torch.long)
        self.steps = cat(self.steps, [0] * n, torch.long)
        self.params = self.params + list(params)

    def keep(self, rows: List[int]) -> None:
        """Keep only `rows` (indices into the current rows, in order)."""
        if not rows:
            self.params = []
            return
        index = torch.tensor(rows, dtype=torch.long, device=self.seeds.device)
        for name in ("temperature", "top_k", "top_p", "seeds", "steps"):
            setattr(self, name, getattr(self, name).index_select(0, index))
        self.params = [self.params[i] for i in rows]

    def clear(self) -> None:
        self.params = []

    def step(self, logits: torch.Tensor, first: int) -> Sampled:
        """Sample one token for rows [first:] (their logits (B, V)); advances those rows' step counters."""
        rows = slice(first, None)
        params = self.params[rows]
        V = logits.shape[-1]
        truncate = any(0 < p.top_k < V for p in params) or any(p.top_p < 1 for p in params)  # host-side: no sync
        temperature = self.temperature[rows]
        logp = processed_logprobs(logits, temperature, self.top_k[rows], self.top_p[rows], truncate)  # (B, V)
        any_sampled = any(p.temperature > 0 for p in params)  # host-side: no sync
        tokens = sample(logp, temperature == 0, self.seeds[rows], self.steps[rows], any_sampled)  # (B,)
        self.steps[rows] += 1
        picked = logp.gather(-1, tokens.unsqueeze(-1))  # (B, 1)
        columns = [tokens.unsqueeze(-1).double(), picked.double()]
        want_top = min(max((p.logprobs or 0) for p in params), V)
        if want_top:
            top_values, top_ids = logp.topk(want_top, dim=-1)  # (B, k) each
            columns += [top_values.double(), top_ids.double()]
        host = torch.cat(columns, dim=-1).clamp(min=LOGPROB_FLOOR).tolist()  # the step's one synchronisation
        return Sampled(
            tokens=[int(r[0]) for r in host],
            logprobs=[r[1] for r in host],
            top_ids=[[int(t) for t in r[2 + want_top :]] for r in host],
            top_logprobs=[r[2 : 2 + want_top] for r in host],
        )
