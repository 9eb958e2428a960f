"""From the train_step JSON to padded micro-batches.

Sequences are checked, trimmed after their last trained token (causal attention: later tokens
cannot change earlier logits), sorted longest first and packed greedily so that each
micro-batch's padded size B * T stays within `micro_batch_tokens` (a longer sequence goes alone)
and no sequence in it is shorter than MIN_FILL of its longest: padding is compute spent on
nothing, and agent episodes differ in length by whole turns (one budget-sized micro-batch of
quickstart episodes was ~45% padding).
Each token carries its aggregation weight computed from the whole batch's totals, so summing the
micro-batch losses gives the same number however the sequences were split.
"""
from __future__ import annotations

import math
from typing import Any, Callable, List, Mapping, NamedTuple, Optional, Sequence as Seq

import torch

from .loss import aggregation_weights

BATCH_KEYS = {"loss", "sequences"}
MIN_FILL = 0.8  # shortest / longest sequence in a micro-batch: at most 20% of it is padding
SEQUENCE_KEYS = {"token_ids", "loss_mask", "logprobs", "advantage", "advantages"}


class BatchError(ValueError):
    """The batch JSON is malformed (the server answers 400 with this message)."""


class Sequence(NamedTuple):
    token_ids: List[int]  # (T,)
    loss_mask: List[int]  # (T,) 1 on engine-generated tokens
    logprobs: List[float]  # (T,) behaviour logprobs; 0 where the mask is 0
    advantages: List[float]  # (T,) per-token advantage (a per-sequence advantage repeated)


class MicroBatch(NamedTuple):
    input_ids: torch.Tensor  # (B, T) int64, right-padded with 0
    loss_mask: torch.Tensor  # (B, T) float32, 1 on trained tokens, 0 on context and padding
    behaviour_logprobs: torch.Tensor  # (B, T) float32, the engine's logprobs
    advantages: torch.Tensor  # (B, T) float32
    weights: torch.Tensor  # (B, T) float32, aggregation weight of each token's loss (see loss.aggregation_weights)
    # (1, T) int64: which sequence of a packed row each token belongs to; None = one sequence per row
    segments: Optional[torch.Tensor] = None


class TrainBatch(NamedTuple):
    loss: str  # "pg" or "sft"
    micro_batches: List[MicroBatch]
    tokens: int  # trained tokens in the whole batch
    sequences: int
    padded_tokens: int  # sum of B * T over micro-batches (the compute actually spent)


def build_batch(
    data: Any,
    default_loss: str,
    aggregation: str,
    micro_batch_tokens: int,
    norm_constant: Optional[int] = None,
    min_fill: float = MIN_FILL,
    pack_sequences: bool = False,
    model_width: int = 0,
) -> TrainBatch:
    """Parse, check and pack a train_step body; raises BatchError naming the first problem.
    With `pack_sequences` a micro-batch holds rows of sequences end to end (pack_rows, each row at most
    packed_row_tokens long), with `segments` telling them apart, instead of one padded row per sequence."""
    loss = _parse_loss(data, default_loss)
    sequences = [_parse_sequence(s, i, loss) for i, s in enumerate(data["sequences"])]
    tokens = sum(sum(s.loss_mask) for s in sequences)
    if norm_constant is None:
        # No constant given: the longest trained span in this batch stands in for the generation budget.
        norm_constant = max(sum(s.loss_mask) for s in sequences)
    lengths = [len(s.token_ids) for s in sequences]
    if pack_sequences:
        rows = pack_rows(lengths, packed_row_tokens(lengths, micro_batch_tokens, model_width))
        # rows per micro-batch
        groups = pack([sum(lengths[i] for i in row) for row in rows], micro_batch_tokens, min_fill)
        micro_batches = [
            _collate_packed(
                [[sequences[i] for i in rows[r]] for r in group], aggregation, tokens, len(sequences), norm_constant
            )
            for group in groups
        ]
    else:
        micro_batches = [
            _collate([sequences[i] for i in group], aggregation, tokens, len(sequences), norm_constant)
            for group in pack(lengths, micro_batch_tokens, min_fill)
        ]
    padded = sum(mb.input_ids.numel() for mb in micro_batches)
    return TrainBatch(loss, micro_batches, tokens, len(sequences), padded)


def pack(lengths: Seq[int], budget: int, min_fill: float = MIN_FILL) -> List[List[int]]:
    """Indices of sequences per micro-batch, longest first, each with (count * longest) <= budget
    and every length >= min_fill * longest."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    groups: List[List[int]] = []
    for i in order:
        # Sorted descending, so the group's first sequence sets its padded length.
        longest = lengths[groups[-1][0]] if groups else 0
        if groups and (len(groups[-1]) + 1) * longest <= budget and lengths[i] >= min_fill * longest:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def packed_row_tokens(lengths: Seq[int], micro_batch_tokens: int, model_width: int) -> int:
    """How long a packed row may get: the longest sequence, or the model's width (hidden size) when that is
    longer, never past the micro-batch. Attention over a row costs its length per token, the projections
    the width, so rows no longer than the width keep attention a small share of the step (under a block-
    diagonal mask every position of a row is scored). One row of a whole micro-batch (8192 tokens of 80-
    to 150-token sequences, width 128) made a CPU quickstart step 40x slower than padded rows."""
    return max(max(lengths), min(micro_batch_tokens, model_width))


def pack_rows(lengths: Seq[int], budget: int) -> List[List[int]]:
    """Indices of sequences per packed row, first-fit decreasing: each row's total length <= budget
    (a longer sequence gets a row of its own)."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    rows: List[List[int]] = []
    room: List[int] = []
    for i in order:
        fit = next((r for r, free in enumerate(room) if lengths[i] <= free), None)
        if fit is None:
            rows.append([i])
            room.append(budget - lengths[i])
        else:
            rows[fit].append(i)
            room[fit] -= lengths[i]
    return rows


def _parse_loss(data: Any, default_loss: str) -> str:
    if not isinstance(data, Mapping):
        raise BatchError(f"batch: expected an object, got {type(data).__name__}")
    unknown = sorted(set(data) - BATCH_KEYS)
    if unknown:
        raise BatchError(f"batch: unknown key {unknown[0]!r} (known: loss, sequences)")
    loss = data.get("loss", default_loss)
    if loss not in ("pg", "sft"):
        raise BatchError(f"batch.loss: expected pg or sft, got {loss!r}")
    if not isinstance(data.get("sequences"), list) or not data["sequences"]:
        raise BatchError("batch.sequences: expected a non-empty list")
    return loss


def _parse_sequence(raw: Any, index: int, loss: str) -> Sequence:
    where = f"sequences[{index}]"
    if not isinstance(raw, Mapping):
        raise BatchError(f"{where}: expected an object")
    unknown = sorted(set(raw) - SEQUENCE_KEYS)
    if unknown:
        raise BatchError(f"{where}: unknown key {unknown[0]!r}")
    ids = _numbers(raw.get("token_ids"), f"{where}.token_ids", integer=True)
    n = len(ids)
    if n < 2:
        raise BatchError(f"{where}.token_ids: needs at least 2 tokens, got {n}")
    if any(t < 0 for t in ids):
        raise BatchError(f"{where}.token_ids: negative token id")
    mask = _numbers(raw.get("loss_mask"), f"{where}.loss_mask", integer=True, length=n)
    if any(m not in (0, 1) for m in mask):
        raise BatchError(f"{where}.loss_mask: values must be 0 or 1")
    if mask[0] == 1:
        raise BatchError(f"{where}.loss_mask: the first token has no context and cannot be trained")
    if not any(mask):
        raise BatchError(f"{where}.loss_mask: no trained token")
    if "logprobs" in raw:
        logprobs = _numbers(raw["logprobs"], f"{where}.logprobs", length=n)
    elif loss == "sft":
        logprobs = [0.0] * n
    else:
        raise BatchError(f"{where}.logprobs: required for the pg loss")
    if "advantage" in raw and "advantages" in raw:
        raise BatchError(f"{where}: give one of advantage, advantages, not both")
    if "advantage" in raw:
        (value,) = _numbers([raw["advantage"]], f"{where}.advantage")
        advantages = [value] * n
    elif "advantages" in raw:
        advantages = _numbers(raw["advantages"], f"{where}.advantages", length=n)
    elif loss == "sft":
        advantages = [1.0] * n
    else:
        raise BatchError(f"{where}: advantage (per sequence) or advantages (per token) required for the pg loss")
    last = max(i for i, m in enumerate(mask) if m) + 1
    return Sequence(ids[:last], mask[:last], logprobs[:last], advantages[:last])


def _numbers(value: Any, where: str, integer: bool = False, length: Optional[int] = None) -> list:
    if not isinstance(value, list):
        raise BatchError(f"{where}: expected a list, got {type(value).__name__}")
    if length is not None and len(value) != length:
        raise BatchError(f"{where}: expected {length} values (one per token), got {len(value)}")
    for v in value:
        ok = isinstance(v, int) if integer else isinstance(v, (int, float)) and math.isfinite(v)
        if not ok or isinstance(v, bool):
            raise BatchError(f"{where}: expected {'integers' if integer else 'finite numbers'}, got {v!r}")
    return value if integer else [float(v) for v in value]


def _collate(sequences: List[Sequence], aggregation: str, tokens: int, total: int, norm_constant: float) -> MicroBatch:
    width = max(len(s.token_ids) for s in sequences)

    def pad(rows: List[list], dtype: torch.dtype) -> torch.Tensor:
        return torch.tensor([r + [0] * (width - len(r)) for r in rows], dtype=dtype)  # (B, T)

    mask = pad([s.loss_mask for s in sequences], torch.float32)
    return MicroBatch(
        input_ids=pad([s.token_ids for s in sequences], torch.int64),
        loss_mask=mask,
        behaviour_logprobs=pad([s.logprobs for s in sequences], torch.float32),
        advantages=pad([s.advantages for s in sequences], torch.float32),
        weights=aggregation_weights(mask, aggregation, tokens, total, norm_constant),
    )


def _collate_packed(
    rows: List[List[Sequence]], aggregation: str, tokens: int, total: int, norm_constant: float
) -> MicroBatch:
    """Rows of sequences end to end, padded to the longest row; `segments` numbers the sequences of a
    row, and a row's padding is one more segment of its own (it attends only to itself and carries no
    loss). Per-sequence aggregation (seq-mean-token-mean) weighs each sequence by its own length, so
    weights are computed per sequence and laid out the same way."""
    width = max(sum(len(s.token_ids) for s in row) for row in rows)

    def packed(values: Callable[[int, Sequence], list], pad: Callable[[int], int], dtype: torch.dtype) -> torch.Tensor:
        out = []
        for row in rows:
            flat = [v for i, s in enumerate(row) for v in values(i, s)]
            out.append(flat + [pad(len(row))] * (width - len(flat)))
        return torch.tensor(out, dtype=dtype)  # (R, T)

    weights = {
        id(s): aggregation_weights(
            torch.tensor([s.loss_mask], dtype=torch.float32), aggregation, tokens, total, norm_constant
        )[0].tolist()
        for row in rows
        for s in row
    }
    zero = lambda _n: 0  # noqa: E731
    return MicroBatch(
        input_ids=packed(lambda _i, s: s.token_ids, zero, torch.int64),
        loss_mask=packed(lambda _i, s: s.loss_mask, zero, torch.float32),
        behaviour_logprobs=packed(lambda _i, s: s.logprobs, zero, torch.float32),
        advantages=packed(lambda _i, s: s.advantages, zero, torch.float32),
        weights=packed(lambda _i, s: weights[id(s)], zero, torch.float32),
        segments=packed(lambda i, s: [i] * len(s.token_ids), lambda n: n, torch.int64),
    )
