"""Per-row sampling with vLLM's `processed_logprobs` semantics.

The distribution a token is sampled from is softmax(truncate(logits / temperature)): top-k keeps the
k largest (ties at the k-th value kept), top-p keeps the smallest prefix of the sorted distribution
whose mass reaches p (the top token always), and every other token gets -inf. The reported logprob is
that distribution's, which is what the importance ratio in the policy-gradient loss needs.
Temperature 0 is greedy (argmax); its logprob is reported from the temperature-1 distribution after
the same truncation (vLLM divides by 1 for greedy rows of a mixed batch; argmax never changes).

Sampling is one batched call for all rows. Its randomness is a counter-based hash of (the sequence's
seed, the position in its completion, the token id), not a stateful generator: a seeded request draws
the same numbers whatever else is batched with it, and no per-row generator loop or RNG state is needed.
"""
from __future__ import annotations

from typing import Optional

import torch

LOGPROB_FLOOR = -9999.0  # vLLM clamps -inf to this in responses


def processed_logprobs(
    logits: torch.Tensor,  # (B, V)
    temperature: torch.Tensor,  # (B,) float; 0 = greedy (scaled as 1)
    top_k: torch.Tensor,  # (B,) long; <= 0 or >= V = off
    top_p: torch.Tensor,  # (B,) float; 1 = off
    truncate: Optional[bool] = None,  # whether any row uses top-k or top-p, when the caller knows it on the host
) -> torch.Tensor:  # (B, V) float32 log-probabilities, -inf outside the kept set
    logits = logits.float()
    V = logits.shape[-1]
    scale = torch.where(temperature > 0, temperature, torch.ones_like(temperature)).to(logits)
    logits = logits / scale.unsqueeze(-1)
    k = torch.where((top_k <= 0) | (top_k > V), torch.full_like(top_k, V), top_k)
    if truncate is None:  # a host synchronisation on a GPU: the engine passes what its settings say
        truncate = bool((k < V).any()) or bool((top_p < 1).any())
    if truncate:
        # Rows without top-k keep from the V-th value and rows without top-p from the last index:
        # both no-ops, so one sort serves every row whatever its settings.
        ordered, _ = logits.sort(dim=-1, descending=True)  # (B, V)
        keep_from = ordered.gather(-1, (k - 1).unsqueeze(-1))  # (B, 1): the k-th largest logit
        probs = torch.softmax(ordered.masked_fill(ordered < keep_from, float("-inf")), dim=-1)
        before = probs.cumsum(-1) - probs  # (B, V): mass of strictly more likely tokens
        inside = before < top_p.to(probs).unsqueeze(-1)
        inside[:, 0] = True
        last = inside.sum(-1, keepdim=True) - 1  # (B, 1) index of the last kept token
        keep_from = torch.where(top_p.unsqueeze(-1) < 1, torch.maximum(keep_from, ordered.gather(-1, last)), keep_from)
        logits = logits.masked_fill(logits < keep_from, float("-inf"))
    return torch.log_softmax(logits, dim=-1)


def sample(
    logprobs: torch.Tensor,  # (B, V) from processed_logprobs
    greedy: torch.Tensor,  # (B,) bool
    seeds: torch.Tensor,  # (B,) int64: each sequence's seed (a request's seed + choice index, or one drawn for it)
    steps: torch.Tensor,  # (B,) int64: tokens each sequence has sampled so far
    any_sampled: bool = True,  # whether any row samples (is not greedy), when the caller knows it on the host
) -> torch.Tensor:  # (B,) long
    """argmax(p / q) with q ~ Exp(1) per token (the exponential race vLLM uses), q a function of
    (seed, step, token) only, so a seeded sequence samples the same tokens whatever else is in the batch.
    A batch of greedy rows draws no noise: hashing (B, V) ids is a tenth of a SmolLM2 decode step at 16 rows."""
    greedy_tokens = logprobs.argmax(-1)
    if not any_sampled:
        return greedy_tokens
    sampled = (logprobs.exp() / exponential_noise(seeds, steps, logprobs.shape[-1])).argmax(-1)
    return torch.where(greedy, greedy_tokens, sampled)


def exponential_noise(seeds: torch.Tensor, steps: torch.Tensor, vocab: int) -> torch.Tensor:
    """(B, V) float32 Exp(1) draws, one per (row, token): -log(u), u in (0, 1) from 23 bits of a hash of
    (seed, step, token id). The per-row key mixes 64 bits (splitmix64); the per-token hash is 32-bit
    (lowbias32) to keep the (B, V) work to a few int32 operations."""
    row_key = _splitmix64(_splitmix64(seeds) + steps)  # (B,) int64
    row_key = (row_key ^ _shr(row_key, 32)) & 0xFFFFFFFF  # fold to 32 bits
    tokens = torch.arange(vocab, device=seeds.device, dtype=torch.int64) * 0x9E3779B1  # (V,) spread token ids
    x = ((row_key.unsqueeze(-1) ^ tokens.unsqueeze(0)) & 0xFFFFFFFF).to(torch.int32)  # (B, V)
    x = _lowbias32(x)
    bits = _shr(x, 9).to(torch.float32)  # (B, V) in [0, 2^23)
    return -torch.log((bits + 0.5) * (1.0 / (1 << 23)))


def _shr(x: torch.Tensor, shift: int) -> torch.Tensor:
    """Logical right shift of a signed tensor (torch's >> is arithmetic)."""
    width = 64 if x.dtype == torch.int64 else 32
    return (x >> shift) & ((1 << (width - shift)) - 1)


def _signed(constant: int, width: int) -> int:
    return constant - (1 << width) if constant >= 1 << (width - 1) else constant


def _splitmix64(z: torch.Tensor) -> torch.Tensor:  # int64 arithmetic wraps: the multiplications are mod 2^64
    z = z + _signed(0x9E3779B97F4A7C15, 64)
    z = (z ^ _shr(z, 30)) * _signed(0xBF58476D1CE4E5B9, 64)
    z = (z ^ _shr(z, 27)) * _signed(0x94D049BB133111EB, 64)
    return z ^ _shr(z, 31)


def _lowbias32(x: torch.Tensor) -> torch.Tensor:  # int32 arithmetic wraps: the multiplications are mod 2^32
    x = x ^ _shr(x, 16)
    x = x * _signed(0x7FEB352D, 32)
    x = x ^ _shr(x, 15)
    x = x * _signed(0x846CA68B, 32)
    return x ^ _shr(x, 16)
