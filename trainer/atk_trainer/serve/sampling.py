"""Per-row sampling with vLLM's `processed_logprobs` semantics.

The distribution a token is sampled from is softmax(truncate(logits / temperature)): top-k keeps the
k largest (ties at the k-th value kept), top-p keeps the smallest prefix of the sorted distribution
whose mass reaches p (the top token always), and every other token gets -inf. The reported logprob is
that distribution's, which is what the importance ratio in the policy-gradient loss needs.
Temperature 0 is greedy (argmax); its logprob is reported from the temperature-1 distribution after
the same truncation (vLLM divides by 1 for greedy rows of a mixed batch; argmax never changes).
"""
from __future__ import annotations

from typing import List, Optional

import torch

LOGPROB_FLOOR = -9999.0  # vLLM clamps -inf to this in responses


def processed_logprobs(
    logits: torch.Tensor,  # (B, V)
    temperature: torch.Tensor,  # (B,) float; 0 = greedy (scaled as 1)
    top_k: torch.Tensor,  # (B,) long; <= 0 or >= V = off
    top_p: torch.Tensor,  # (B,) float; 1 = off
) -> torch.Tensor:  # (B, V) float32 log-probabilities, -inf outside the kept set
    logits = logits.float()
    V = logits.shape[-1]
    scale = torch.where(temperature > 0, temperature, torch.ones_like(temperature)).to(logits)
    logits = logits / scale.unsqueeze(-1)
    k = torch.where((top_k <= 0) | (top_k > V), torch.full_like(top_k, V), top_k)
    use_k, use_p = bool((k < V).any()), bool((top_p < 1).any())
    if use_k or use_p:
        ordered, _ = logits.sort(dim=-1, descending=True)  # (B, V)
        keep_from = ordered.gather(-1, (k - 1).unsqueeze(-1))  # (B, 1): the k-th largest logit
        if use_p:
            probs = torch.softmax(ordered.masked_fill(ordered < keep_from, float("-inf")), dim=-1)
            before = probs.cumsum(-1) - probs  # (B, V): mass of strictly more likely tokens
            inside = before < top_p.to(probs).unsqueeze(-1)
            inside[:, 0] = True
            last = inside.sum(-1, keepdim=True) - 1  # (B, 1) index of the last kept token
            keep_from = torch.maximum(keep_from, ordered.gather(-1, last))
        logits = logits.masked_fill(logits < keep_from, float("-inf"))
    return torch.log_softmax(logits, dim=-1)


def sample(
    logprobs: torch.Tensor,  # (B, V) from processed_logprobs
    greedy: torch.Tensor,  # (B,) bool
    generators: List[Optional[torch.Generator]],  # per row: its request's seeded generator, or None
    shared: torch.Generator,  # for rows without a seed
) -> torch.Tensor:  # (B,) long
    """argmax(p / q) with q ~ Exp(1) per token (the exponential race vLLM uses), one RNG per seeded
    row so a seeded request draws the same numbers whatever else is in the batch."""
    probs = logprobs.exp()
    noise = torch.empty_like(probs)
    unseeded = [i for i, g in enumerate(generators) if g is None]
    if unseeded:
        noise[unseeded] = torch.empty(len(unseeded), probs.shape[1], device=probs.device).exponential_(generator=shared)
    for i, g in enumerate(generators):
        if g is not None:
            noise[i].exponential_(generator=g)
    sampled = (probs / noise).argmax(-1)
    return torch.where(greedy, logprobs.argmax(-1), sampled)
