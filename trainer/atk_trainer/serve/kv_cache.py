"""The built-in qwen2's KV cache for batched generation (atk_trainer.serve.decoders drives it).

Rows are sequences, slots (the S axis) positions in the cache shared by all rows; see KVCache. The
model's forward sees only begin, recent and layer (atk_trainer.model.attention_cache.AttentionCache);
the rest (rows joining and retiring, rows kept for the prefix cache) is the engine's, so it lives here.
"""
from __future__ import annotations

from typing import Any, List, NamedTuple, Optional

import torch
import torch.nn.functional as F


class RowKV(NamedTuple):
    """One sequence's keys and values taken out of a KVCache (KVCache.extract)."""

    valid: torch.Tensor  # (n,) bool: real slots
    keys: List[torch.Tensor]  # per layer (Hkv, n, D)
    values: List[torch.Tensor]  # per layer (Hkv, n, D)

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.keys + self.values)

    def prefix(self, n: int) -> "RowKV":
        """The keys and values of the first `n` tokens (views): a token's keys and values depend only on the
        tokens before it, so they serve any sequence that starts with those `n` tokens."""
        if n == len(self.valid):
            return self
        return RowKV(self.valid[:n], [k[:, :n] for k in self.keys], [v[:, :n] for v in self.values])


class KVCache:
    """Keys and values of a batch of sequences that decode together, for one model.

    Slots (the S axis) are shared by all rows: a forward with T new tokens writes them into the next
    T slots of every row, and `valid` (rows, S) marks which slots hold a real token of that row, so
    rows of different lengths, rows that joined later (`join`) and retired rows (`retire`, all slots
    masked, reusable by a join) live in one tensor. Storage grows by doubling in rows and slots, and
    leading slots no row uses any more are dropped once they are half the span, so decode steps,
    joins and retirements write in place and the cache is copied only now and then.
    """

    def __init__(self, layers: int, batch: int, kv_heads: int, head_dim: int, device, dtype, capacity: int = 64):
        shape = (batch, kv_heads, capacity, head_dim)
        self.keys: List[torch.Tensor] = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(layers)]
        self.values: List[torch.Tensor] = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(layers)]
        self.valid = torch.zeros(batch, capacity, dtype=torch.bool, device=device)  # (row capacity, capacity)
        self.rows = batch  # rows in use: [0, rows)
        self.used = 0  # slots in use: [0, used)
        self._new = 0  # tokens of the forward in progress
        self._may_have_unused = False  # rows retired or replaced since the last look for unused leading slots

    @staticmethod
    def for_model(module: Any, batch: int, capacity: int = 64) -> "KVCache":
        """A cache for `module`, an atk_trainer.model.decoder.DecoderForCausalLM."""
        c = module.config
        weight = module.model.embed_tokens.weight
        return KVCache(
            c.num_hidden_layers, batch, c.num_key_value_heads, c.head_dim, weight.device, weight.dtype, capacity
        )

    @staticmethod
    def slot_bytes_for(module: Any) -> int:
        """`slot_bytes` of a cache for_model(module) makes, before there is one."""
        c = module.config
        size = module.model.embed_tokens.weight.element_size()
        return 2 * c.num_hidden_layers * c.num_key_value_heads * c.head_dim * size

    @property
    def batch(self) -> int:
        return self.rows

    @property
    def slot_bytes(self) -> int:
        """Bytes one token of one row takes, keys and values of every layer."""
        return sum(t.shape[1] * t.shape[3] * t.element_size() for t in self.keys + self.values)

    @property
    def capacity(self) -> int:
        return self.valid.shape[1]

    @property
    def row_capacity(self) -> int:
        return self.valid.shape[0]

    def begin(self, input_ids: torch.Tensor, new_valid: Optional[torch.Tensor]) -> torch.Tensor:
        """Reserve slots for T new tokens; returns the attention mask (B, 1, T, S) over old and new slots."""
        B, T = input_ids.shape
        if B != self.rows:
            raise ValueError(f"KVCache holds {self.rows} rows, the forward has {B}")
        if self._may_have_unused:
            self._drop_unused_slots()
        self._reserve(self.used + T)
        start, self._new = self.used, T
        self.valid[:B, start : start + T] = True if new_valid is None else new_valid
        self.used += T
        S = self.used
        if T == 1:
            # A decode step: every old slot is causally visible, so the mask is the valid slots, plus
            # the new slot for rows fed padding (so no row is all -inf).
            mask = self.valid[:B, :S].clone()  # (B, S)
            mask[:, start] = True
            return mask.view(B, 1, 1, S)
        causal = torch.ones(T, S, dtype=torch.bool, device=self.valid.device).tril(diagonal=start)  # (T, S)
        mask = causal.unsqueeze(0) & self.valid[:B, :S].unsqueeze(1)  # (B, T, S)
        # A padding token attends at least to itself, so its (unused) row is never all -inf -> NaN.
        diagonal = torch.zeros(T, S, dtype=torch.bool, device=self.valid.device)
        diagonal[:, start:] = torch.eye(T, dtype=torch.bool, device=self.valid.device)
        return (mask | diagonal).unsqueeze(1)

    def recent(self, window: int) -> torch.Tensor:
        """(B, 1, T, S) bool: for each of the forward's T new tokens, the slots holding its row's last
        `window` real tokens, itself included. Slots are not positions (rows have masked gaps), but a
        row's real slots are its tokens in order, so counting them gives the distance."""
        B, S = self.rows, self.used
        seen = self.valid[:B, :S].long().cumsum(-1)  # (B, S): real tokens up to each slot
        distance = seen[:, S - self._new :].unsqueeze(-1) - seen.unsqueeze(1)  # (B, T, S)
        return (distance < window).unsqueeze(1)

    def layer(self, i: int) -> "_LayerCache":
        return _LayerCache(self, i)

    def merge(self, other: "KVCache", rows: Optional[torch.Tensor] = None) -> None:
        """Keep `rows` of this cache (all when None), then append `other`'s rows (see `join`)."""
        if rows is not None:
            self.select(rows)
        self.join(other, torch.arange(self.rows, self.rows + other.rows, device=self.valid.device))

    def join(self, other: "KVCache", rows: torch.Tensor) -> None:
        """Write `other`'s rows into rows `rows` of this cache: retired rows, or the next new ones
        (self.rows, self.rows + 1, ...). They are aligned on their last slot, so the next token of every
        row goes into the same slot; when they are longer, the old rows get masked slots before their
        next token instead of moving. Only the new rows are written."""
        n, theirs = other.rows, other.used
        S = max(self.used, theirs)
        self._reserve(S)
        self._reserve_rows(max(self.rows, int(rows.max()) + 1))
        self.valid[: self.rows, self.used : S] = False  # the old rows' gap, when the new rows are longer
        self.valid[rows] = False
        # A retired row taken over may have held the only use of leading slots; appended rows free none.
        self._may_have_unused = self._may_have_unused or int(rows.min()) < self.rows
        self.valid[rows, S - theirs : S] = other.valid[:n, :theirs]
        for store, their_store in ((self.keys, other.keys), (self.values, other.values)):
            for i, t in enumerate(store):
                t[rows, :, : S - theirs] = 0  # masked, but must not be NaN (see select)
                t[rows, :, S - theirs : S] = their_store[i][:n, :, :theirs]
        self.rows, self.used = max(self.rows, int(rows.max()) + 1), S

    def extract(self, row: int) -> "RowKV":
        """A copy of one row's real slots, to continue it later. Masked gaps are left out: they would
        carry over into every batch the continuation joins (rotary positions live in the keys, and
        attention cares only which slots are real, so packing the real ones changes nothing)."""
        slots = self.valid[row, : self.used].nonzero().squeeze(-1)  # (n,)
        return RowKV(
            torch.ones(len(slots), dtype=torch.bool, device=self.valid.device),
            [k[row].index_select(1, slots) for k in self.keys],
            [v[row].index_select(1, slots) for v in self.values],
        )

    def load_rows(self, rows: List[Optional[RowKV]]) -> "KVCache":
        """Fill this empty cache with one extracted row per entry (None: an empty row), each aligned
        on its last slot, ready for a forward that continues them; returns self."""
        if self.used or self.rows != len(rows):
            raise ValueError(f"load_rows: needs an empty cache of {len(rows)} rows")
        S = max((len(r.valid) for r in rows if r is not None), default=0)
        self._reserve(S + 64)  # room for the continuations' new tokens without growing again
        for i, r in enumerate(rows):
            if r is None:
                continue
            n = len(r.valid)
            self.valid[i, S - n : S] = r.valid
            for layer in range(len(self.keys)):
                self.keys[layer][i, :, S - n : S] = r.keys[layer]
                self.values[layer][i, :, S - n : S] = r.values[layer]
        self.used = S
        return self

    def retire(self, rows: torch.Tensor) -> None:
        """Mask every slot of `rows`: they stop counting, and a later join may reuse them."""
        self.valid[rows] = False
        self._may_have_unused = True

    def select(self, rows: torch.Tensor) -> None:
        """Keep only `rows` (indices, in that order) and drop the slots none of them uses, in place: the
        storage keeps its size and address (a captured decode step reads it there, static_decode.py)."""
        valid = self.valid[rows, : self.used]
        # Every slot a kept row uses lies in [first, used) (gaps inside are masked and harmless).
        first = _first_used_slot(valid)
        S, n = self.used - first, len(rows)
        for store in (self.keys, self.values):
            for t in store:
                # Slots left behind keep finite old values: masked, so they weigh exactly 0.
                t[:n, :, :S] = t[rows, :, first : self.used]  # the gather copies before the write
        self.valid[:n, :S] = valid[:, first:]
        self.valid[:n, S:] = False
        self.valid[n:] = False
        self.rows, self.used = n, S

    def _drop_unused_slots(self) -> None:
        """Shift the slots left over the leading ones no row uses once those are half the span (the
        oldest rows retired): attention reads every slot up to `used`, and storage would only grow."""
        if self.used < 64:
            return
        self._may_have_unused = False
        first = _first_used_slot(self.valid[: self.rows, : self.used])
        if 2 * first < self.used:
            return
        S = self.used - first
        for store in (self.keys, self.values):
            for t in store:
                t[: self.rows, :, :S] = t[: self.rows, :, first : self.used].clone()
        self.valid[: self.rows, :S] = self.valid[: self.rows, first : self.used].clone()
        self.valid[: self.rows, S : self.used] = False
        self.used = S

    def advance(self) -> int:
        """The host's part of a decode step run by static_decode.StaticDecodeStep: drop unused leading
        slots, make room for one more, and return the slot the step writes (every row writes it)."""
        if self._may_have_unused:
            self._drop_unused_slots()
        self._reserve(self.used + 1)
        self.used, self._new = self.used + 1, 1
        return self.used - 1

    def reserve_rows(self, needed: int) -> None:
        """Make room for `needed` rows (a static step's padding rows live in the rows past `rows`)."""
        self._reserve_rows(needed)

    def reserve(self, needed: int) -> None:
        """Make room for `needed` slots now, so the decode steps to come write in place."""
        self._reserve(needed)

    def _reserve(self, needed: int) -> None:
        if needed <= self.capacity:
            return
        grow = max(needed, 2 * self.capacity) - self.capacity
        self.valid = F.pad(self.valid, (0, grow))
        for store in (self.keys, self.values):
            for i, t in enumerate(store):
                store[i] = F.pad(t, (0, 0, 0, grow))

    def _reserve_rows(self, needed: int) -> None:
        if needed <= self.row_capacity:
            return
        grow = max(needed, 2 * self.row_capacity) - self.row_capacity
        self.valid = F.pad(self.valid, (0, 0, 0, grow))
        for store in (self.keys, self.values):
            for i, t in enumerate(store):
                store[i] = F.pad(t, (0, 0, 0, 0, 0, 0, 0, grow))


def _first_used_slot(valid: torch.Tensor) -> int:
    """The first slot any row of `valid` (rows, S) uses; S when none does."""
    used_any = valid.any(0)  # (S,)
    return int(used_any.long().argmax()) if bool(used_any.any()) else valid.shape[1]


class _LayerCache:
    def __init__(self, cache: KVCache, i: int):
        self.cache, self.i = cache, i

    def append(self, k, v):  # (B, Hkv, T, D) each -> all slots in use (B, Hkv, S, D)
        c = self.cache
        B, start = c.rows, c.used - c._new
        c.keys[self.i][:B, :, start : c.used] = k
        c.values[self.i][:B, :, start : c.used] = v
        return c.keys[self.i][:B, :, : c.used], c.values[self.i][:B, :, : c.used]
