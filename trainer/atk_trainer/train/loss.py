"""Loss functions: pure, tensor in, tensor out, every tensor (B, T) unless noted.

Token positions follow the batch: value [b, t] belongs to token input_ids[b, t] and comes from the
logits at t-1 (position 0 predicts nothing and is 0). A step's loss is sum(per_token * weights)
over all its micro-batches, where `aggregation_weights` folds the global normaliser into the
weights so the result does not depend on how sequences were split into micro-batches.
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch
import torch.nn.functional as F


def token_logprobs(logits: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
    """log p(input_ids[:, t] | input_ids[:, :t]) for every t, in float32; 0 at t = 0."""
    logits = logits[:, :-1].float()  # (B, T-1, V): position t-1 predicts token t
    targets = input_ids[:, 1:]  # (B, T-1)
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (B, T-1)
    logp = picked - torch.logsumexp(logits, dim=-1)  # (B, T-1)
    return F.pad(logp, (1, 0))  # (B, T)


@torch.no_grad()
def token_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy (nats) of the distribution that predicted each token; 0 at t = 0. A metric: no gradient."""
    logits = logits[:, :-1].float()  # (B, T-1, V)
    logp = torch.log_softmax(logits, dim=-1)  # (B, T-1, V)
    entropy = -(logp.exp() * logp).sum(-1)  # (B, T-1)
    return F.pad(entropy, (1, 0))  # (B, T)


def policy_gradient_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    clip_low: float,
    clip_high: float,
    dual_clip: Optional[float] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """PPO's clipped surrogate, per token: -min(r A, clip(r, 1 - clip_low, 1 + clip_high) A), r = exp(logp - old_logp).
    With `dual_clip` c (> 1; Ye et al. 2020, arXiv 1912.09729, eq. 5) a token with A < 0 gets
    -max(min(r A, clip(r) A), c A): its loss stops growing once r passes c, where plain PPO's grows with r.

    Returns (loss (B, T), clipped (B, T) bool: a clipped branch was taken, so the token has no gradient).
    """
    ratio = torch.exp(logp - old_logp)  # (B, T)
    unclipped = ratio * advantages  # (B, T)
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high) * advantages  # (B, T)
    surrogate = torch.minimum(unclipped, clipped)  # (B, T)
    no_gradient = clipped < unclipped  # (B, T)
    if dual_clip is not None:
        floor = dual_clip * advantages  # (B, T)
        dual = (advantages < 0) & (floor > surrogate)  # (B, T)
        surrogate = torch.where(dual, floor, surrogate)
        no_gradient = no_gradient | dual
    return -surrogate, no_gradient


def reinforce_loss(logp: torch.Tensor, advantages: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """REINFORCE (Williams 1992), per token: -A log pi. No ratio and no clip: the value is the paper's, and so is
    the gradient, -A grad log pi.

    Returns (loss (B, T), clipped (B, T) bool: all False).
    """
    return -advantages * logp, torch.zeros_like(logp, dtype=torch.bool)


def behaviour_trust_region(
    logp: torch.Tensor, behaviour_logp: torch.Tensor, advantages: torch.Tensor, clip_low: float, clip_high: float
) -> torch.Tensor:
    """PPO's clip condition against the policy that sampled, as a mask (B, T) bool: True where the
    trainer's probability has already moved past 1 + clip_high (A > 0) or below 1 - clip_low (A < 0) of
    the behaviour probability, so the token gets no gradient. With the ratio taken against the trainer's
    own pre-update logprobs (TIS) it is 1 on the first update and never clips; a policy several versions
    ahead of the one that sampled (asynchronous rollouts) would then go on pushing the same tokens with no
    bound. This keeps PPO's trust region around the behaviour policy."""
    ratio = torch.exp(logp.detach() - behaviour_logp)  # (B, T)
    return ((advantages > 0) & (ratio > 1.0 + clip_high)) | ((advantages < 0) & (ratio < 1.0 - clip_low))


def gspo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    sequence_ids: torch.Tensor,
    clip_low: float,
    clip_high: float,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """GSPO-token (Zheng et al. 2025, arXiv 2507.18071, eq. 11-12), per token:
    -min(s_it A, clip(s_it, 1 - clip_low, 1 + clip_high) A) with s_it = sg[s_i] * pi_t / sg[pi_t] and
    s_i = exp(mean over the sequence's trained tokens of (logp - old_logp)), the length-normalised sequence
    ratio. s_it equals s_i in value, so the clip is decided per sequence; its gradient is s_i * grad log pi_t.
    With seq-mean-token-mean aggregation and one advantage per sequence this is the paper's GSPO objective.
    `sequence_ids` (B, T) numbers the sequences of the micro-batch (see sequence_sums).

    Returns (loss (B, T), clipped (B, T) bool: the clipped branch was taken, so the token has no gradient).
    """
    log_ratio = (logp.detach() - old_logp) * mask  # (B, T)
    log_s = sequence_sums(log_ratio, sequence_ids) / sequence_sums(mask, sequence_ids).clamp(min=1.0)  # (B, T)
    ratio = torch.exp(logp - logp.detach() + log_s)  # (B, T): value s_i, gradient s_i * d logp
    unclipped = ratio * advantages  # (B, T)
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high) * advantages  # (B, T)
    return -torch.minimum(unclipped, clipped), clipped < unclipped


def cispo_loss(
    logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, clip_low: float, clip_high: float
) -> Tuple[torch.Tensor, torch.Tensor]:
    """CISPO (MiniMax-M1, arXiv 2506.13585, eq. 4-5), per token: -sg[clip(r, 1 - clip_low, 1 + clip_high)] A log pi,
    r = exp(logp - old_logp). The importance weight is clipped and detached, so every token keeps a gradient
    (PPO's clip zeroes it): what is bounded is the weight, not the update.

    Returns (loss (B, T), clipped (B, T) bool: the weight was clipped; the token still has its gradient).
    """
    ratio = torch.exp(logp.detach() - old_logp)  # (B, T)
    weight = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)  # (B, T)
    return -weight * advantages * logp, weight != ratio


def mismatch_weights(
    train_logp: torch.Tensor,
    behaviour_logp: torch.Tensor,
    mask: torch.Tensor,
    sequence_ids: torch.Tensor,
    mode: str,
    level: str,
    low: float,
    high: float,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Correction for the engine having sampled from another distribution than the trainer computes (kernels,
    dtype, and with stale rollouts older weights), from the ratio rho = exp(train - behaviour):
    - level token: rho_t per token;
    - level sequence: the product over the sequence's trained tokens, exp(sum of log ratios), which every token of
      the sequence gets (Seq-TIS / Seq-MIS, Liu et al. 2025, "When speed kills stability");
    - level geometric: the geometric mean, exp(mean of log ratios) (Geo-RS, ibid. part 3): a per-token figure, so
      a long sequence is not rejected for its length.
    mode tis: weights clip(rho, low, high) (truncated importance sampling, Yao et al. 2025);
    mode mask: weights rho where low <= rho <= high, 0 outside (IcePop's M(k), Ling team 2025; MIS);
    mode reject: weights 1 inside and 0 outside (rejection without an importance weight, verl's rollout_rs).

    Returns (weights (B, T) detached, masked (B, T) bool: outside [low, high] under mask and reject, else all False).
    """
    log_ratio = (train_logp.detach() - behaviour_logp) * mask  # (B, T)
    if level == "sequence":
        log_ratio = sequence_sums(log_ratio, sequence_ids)  # (B, T)
    elif level == "geometric":
        log_ratio = sequence_sums(log_ratio, sequence_ids) / sequence_sums(mask, sequence_ids).clamp(min=1.0)
    elif level != "token":
        raise ValueError(f"unknown mismatch level {level!r}")
    ratio = torch.exp(log_ratio)  # (B, T)
    if mode == "tis":
        return ratio.clamp(min=low, max=high), torch.zeros_like(ratio, dtype=torch.bool)
    if mode in ("mask", "reject"):
        outside = (ratio < low) | (ratio > high)  # (B, T)
        kept = ratio if mode == "mask" else torch.ones_like(ratio)  # (B, T)
        return torch.where(outside, torch.zeros_like(ratio), kept), outside
    raise ValueError(f"unknown mismatch mode {mode!r}")


def drop_from_count(
    weights: torch.Tensor,
    mask: torch.Tensor,
    kept: torch.Tensor,
    sequence_ids: torch.Tensor,
    mode: str,
    counts: Tuple[float, float, float, float],
) -> torch.Tensor:
    """Aggregation weights (aggregation_weights' output for `mask`) redone as if only the `kept` tokens had been
    trained: what a rejection that leaves the count does (verl's rollout rejection sampling edits the response
    mask before aggregating). `counts` = (tokens, kept tokens, sequences, sequences with a kept token) over the
    whole step's batch; a sequence with no kept token leaves the sequence count.
    kept (B, T) float, 1 where a trained token survives the rejection. Returns (B, T).
    """
    tokens, kept_tokens, sequences, kept_sequences = counts
    scaled = weights * kept  # (B, T)
    if mode == "token-sum":
        return scaled
    if mode == "token-mean":
        return scaled * (tokens / max(kept_tokens, 1.0))
    scaled = scaled * (sequences / max(kept_sequences, 1.0))
    if mode == "seq-mean-token-mean":
        lengths = sequence_sums(mask, sequence_ids)  # (B, T)
        kept_lengths = sequence_sums(kept, sequence_ids).clamp(min=1.0)  # (B, T)
        return scaled * lengths / kept_lengths
    if mode in ("seq-mean-token-sum", "seq-mean-token-sum-norm"):
        return scaled
    raise ValueError(f"unknown loss aggregation {mode!r}")


def count_sequences(mask: torch.Tensor, sequence_ids: torch.Tensor) -> int:
    """How many sequences of a micro-batch have a token where `mask` (B, T) is nonzero."""
    return int((_per_sequence(mask, sequence_ids) > 0).sum())


def sequence_sums(values: torch.Tensor, sequence_ids: torch.Tensor) -> torch.Tensor:
    """Each token's value replaced by the sum over the tokens of its sequence: (B, T) -> (B, T).
    `sequence_ids` (B, T) int64 gives each token's sequence, numbered from 0 within the micro-batch
    (a row per sequence, or several sequences packed in a row)."""
    return _per_sequence(values, sequence_ids)[sequence_ids]  # (B, T)


def _per_sequence(values: torch.Tensor, sequence_ids: torch.Tensor) -> torch.Tensor:
    """The sum of `values` (B, T) over each sequence: (S,), S = the largest sequence id + 1."""
    flat = sequence_ids.reshape(-1)  # (B*T,)
    sums = torch.zeros(int(flat.max()) + 1, dtype=values.dtype, device=values.device)  # (S,)
    return sums.index_add(0, flat, values.reshape(-1))


def sequence_ids(shape: Tuple[int, int], segments: Optional[torch.Tensor], device: torch.device) -> torch.Tensor:
    """Which sequence each token of a micro-batch belongs to, numbered from 0: (B, T) int64. One sequence per
    row without `segments`; packed rows number theirs by row and segment (padding gets an id of its own)."""
    rows, width = shape
    row = torch.arange(rows, device=device).unsqueeze(1).expand(rows, width)  # (B, T)
    if segments is None:
        return row
    return row * (int(segments.max()) + 1) + segments  # (B, T)


def kl_penalty(logp: torch.Tensor, ref_logp: torch.Tensor, estimator: str) -> torch.Tensor:
    """Per-token estimate of KL(policy || reference) from samples of the policy.

    k1 = logp - ref_logp (unbiased, can be negative); k2 = (logp - ref_logp)^2 / 2 (biased, low variance, never
    negative; its gradient is that of the reverse KL); k3 = exp(ref - logp) - (ref - logp) - 1 (unbiased and never
    negative; used by GRPO). All three from Schulman 2020, "Approximating KL divergence".
    """
    if estimator == "k1":
        return logp - ref_logp  # (B, T)
    if estimator == "k2":
        return 0.5 * (logp - ref_logp).square()  # (B, T)
    if estimator == "k3":
        log_ratio = ref_logp - logp  # (B, T)
        return torch.exp(log_ratio) - log_ratio - 1.0
    raise ValueError(f"unknown kl estimator {estimator!r}")


def sft_loss(logp: torch.Tensor) -> torch.Tensor:
    """Cross-entropy per token: -log p(token). Masked and aggregated like the policy-gradient loss."""
    return -logp  # (B, T)


def aggregation_weights(
    loss_mask: torch.Tensor, mode: str, total_tokens: int, total_sequences: int, norm_constant: Optional[float] = None
) -> torch.Tensor:
    """Weight of each token's loss so that sum(per_token * weights) over all micro-batches is the aggregate.

    total_tokens / total_sequences count the whole step's batch, not this micro-batch.
    - token-sum: the plain sum over every trained token of the batch (no normaliser: the gradient grows with the
      batch, as in REINFORCE written as a sum).
    - token-mean: every trained token counts the same (DAPO).
    - seq-mean-token-sum: sum per sequence, mean over sequences.
    - seq-mean-token-mean: mean per sequence, mean over sequences (GRPO as published).
    - seq-mean-token-sum-norm: sum per sequence divided by a constant, mean over sequences (Dr. GRPO),
      so long and short answers are not reweighted by their own length.
    """
    mask = loss_mask.float()  # (B, T)
    if mode == "token-sum":
        return mask
    if mode == "token-mean":
        return mask / total_tokens
    if mode == "seq-mean-token-sum":
        return mask / total_sequences
    if mode == "seq-mean-token-mean":
        lengths = mask.sum(-1, keepdim=True).clamp(min=1.0)  # (B, 1)
        return mask / (lengths * total_sequences)
    if mode == "seq-mean-token-sum-norm":
        if norm_constant is None:
            raise ValueError("seq-mean-token-sum-norm needs a norm constant")
        return mask / (norm_constant * total_sequences)
    raise ValueError(f"unknown loss aggregation {mode!r}")
