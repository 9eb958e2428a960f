"""Per-token log-probabilities and entropy straight from the final hidden states and the lm_head, in chunks
of positions, so no float32 (tokens x vocabulary) tensor for a whole micro-batch is ever held.

The full-logits way (train/loss.py token_logprobs on policy.logits) keeps B*T*V float32 logits for backward:
32 x 1024 tokens of a 152k-vocabulary Qwen are 20 GB. Here each chunk's logits exist only while that chunk
is computed: in forward they are reduced to one logprob and one entropy per position and dropped, and in
backward (torch.utils.checkpoint) they are recomputed one chunk at a time. Values are the same computation
as the full path, position by position; only the order of the lm_head gradient's sum over positions changes.

Token positions follow the batch: value [b, t] belongs to token input_ids[b, t] and comes from the hidden
state at t-1; positions where a sequence starts (t = 0, and in a packed row every `starts` position) are 0.
"""
from __future__ import annotations

from typing import Callable, Optional, Tuple

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

CHUNK_LOGITS_BYTES = 1 << 28  # float32 logits of one chunk: 256 MiB (~440 positions of a 152k vocabulary)

Head = Callable[[torch.Tensor], torch.Tensor]  # (N, C) hidden states -> (N, V) logits: the lm_head module


def token_stats(
    hidden: torch.Tensor,  # (B, T, C) final hidden states (after the last norm)
    head: Head,
    input_ids: torch.Tensor,  # (B, T)
    starts: Optional[torch.Tensor] = None,  # (B, T) bool: a sequence starts here (packed rows); None = only t = 0
    chunk: Optional[int] = None,  # positions per chunk; None = CHUNK_LOGITS_BYTES worth of float32 logits
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(logp (B, T) float32 with gradient, entropy (B, T) float32 without, top1 (B, T) bool): log
    p(input_ids[:, t] | before), the entropy (nats) of the distribution that predicted it, and whether the
    token was its most likely one (what an SFT step's token accuracy counts)."""
    B, T, C = hidden.shape
    h = hidden[:, :-1].reshape(-1, C)  # (N, C), N = B*(T-1): position t-1 predicts token t
    targets = input_ids[:, 1:].reshape(-1)  # (N,)
    if chunk is None:
        chunk = max(1, CHUNK_LOGITS_BYTES // (4 * _vocab_size(head, h[:1])))
    # One chunk (small vocabularies, short batches) is the full-logits computation: keep its logits for
    # backward as before instead of paying the lm_head matmul twice.
    recompute = torch.is_grad_enabled() and h.requires_grad and h.shape[0] > chunk
    logps, entropies, tops = [], [], []
    for lo in range(0, h.shape[0], chunk):
        piece, wanted = h[lo : lo + chunk], targets[lo : lo + chunk]
        if recompute:
            logp, entropy, top1 = torch.utils.checkpoint.checkpoint(
                _chunk_stats, head, piece, wanted, use_reentrant=False
            )
        else:
            logp, entropy, top1 = _chunk_stats(head, piece, wanted)
        logps.append(logp)
        entropies.append(entropy)
        tops.append(top1)
    logp = F.pad(torch.cat(logps).view(B, T - 1), (1, 0))  # (B, T)
    entropy = F.pad(torch.cat(entropies).view(B, T - 1), (1, 0))  # (B, T)
    top1 = F.pad(torch.cat(tops).view(B, T - 1), (1, 0))  # (B, T) bool, False at t = 0
    if starts is not None:  # a packed row: the token that starts a sequence is predicted by nothing
        keep = (~starts).to(logp.dtype)
        logp, entropy, top1 = logp * keep, entropy * keep, top1 & ~starts
    return logp, entropy, top1


def _chunk_stats(head: Head, h: torch.Tensor, targets: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    logits = head(h).float()  # (n, V)
    lse = torch.logsumexp(logits, dim=-1)  # (n,)
    logp = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - lse  # (n,)
    with torch.no_grad():  # a metric: no gradient, nothing saved for backward
        log_softmax = torch.log_softmax(logits, dim=-1)  # (n, V)
        entropy = -(log_softmax.exp() * log_softmax).sum(-1)  # (n,)
        top1 = logits.argmax(-1) == targets  # (n,)
    return logp, entropy, top1


def _vocab_size(head: Head, probe: torch.Tensor) -> int:
    weight = getattr(head, "weight", None)
    if isinstance(weight, torch.Tensor) and weight.dim() == 2:
        return int(weight.shape[0])
    with torch.no_grad():
        return int(head(probe).shape[-1])
