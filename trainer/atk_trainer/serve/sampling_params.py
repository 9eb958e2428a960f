"""What a request asks of the sampler, per prompt: vLLM's sampling parameters, the subset the engine serves.
Its own module because the engine's decode loop, the per-row sampling settings (row_sampling.py) and the
HTTP API (engine_api.py) all read it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence


@dataclass
class SamplingParams:
    max_tokens: int = 16  # vLLM's /v1/completions default
    temperature: float = 1.0  # 0 = greedy
    top_p: float = 1.0
    top_k: int = -1  # -1 (or 0) = off
    seed: Optional[int] = None  # choice i of a request uses seed + i, as vLLM does for n > 1
    stop_token_ids: Sequence[int] = ()
    ignore_eos: bool = False  # when False the model's eos_token_id also stops
    logprobs: Optional[int] = None  # top logprobs per position besides the sampled token's (None = 0)
    n: int = 1
