"""Batched incremental decoding over a KV cache, one class per backend, behind one small interface:

    decoder.prefill(prompts, budget) -> (B_new, V)   add sequences that will sample up to `budget` tokens;
                                             logits after each prompt's last token
    decoder.decode(tokens)   -> (B, V)       feed one token per running sequence, in row order
    decoder.keep(rows)                       retire every row not listed
    decoder.reused                           per prompt of the last prefill: its leading tokens whose keys
                                             and values came from the prefix cache (not computed)
    decoder.joinable                         whether prefill may add rows while others run
    decoder.reusable                         whether it may outlive its running sequences (same weights)

Prompts are left-padded, so every row's newest token sits in the same (last) cache slot.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import torch

from .kv_cache import KVCache, RowKV
from .prefix_budget import prefix_cache_tokens
from .static_decode import StaticDecodeStep
from ..model.decoder import DecoderForCausalLM


def make_decoder(policy: Any, step: Optional[StaticDecodeStep] = None, prefix_tokens: Optional[int] = None):
    """The decoder for the policy's current module (read anew for every batch: the trainer may swap it);
    `step`, for the built-in model, runs its decode steps at static shapes (static_decode.py);
    `prefix_tokens`, its prefix cache's budget (None: sized from free memory, prefix_budget.py)."""
    module = policy.module
    if isinstance(module, DecoderForCausalLM):
        return BuiltinDecoder(module, step, prefix_tokens)
    return TransformersDecoder(module)


def left_pad(prompts: List[List[int]], device) -> tuple:
    """(ids (B, T), valid (B, T) bool, positions (B, T)) with each prompt right-aligned."""
    T = max(len(p) for p in prompts)
    ids = torch.zeros(len(prompts), T, dtype=torch.long)
    valid = torch.zeros(len(prompts), T, dtype=torch.bool)
    for i, p in enumerate(prompts):
        ids[i, T - len(p) :] = torch.tensor(p, dtype=torch.long)
        valid[i, T - len(p) :] = True
    positions = (valid.long().cumsum(-1) - 1).clamp(min=0)  # (B, T): 0 at each prompt's first token
    return ids.to(device), valid.to(device), positions.to(device)


class BuiltinDecoder:
    """atk_trainer.model.decoder with its KVCache; new rows join a running batch in place, and a prompt that
    shares a prefix with a finished sequence reuses that sequence's keys and values for the longest
    common prefix and computes only the rest, as vLLM's prefix cache does: an agent's next turn (the
    previous context, its completion, a tool result) computes only its new tokens, and a rewritten
    conversation (a sliding window, stripped reasoning: a new trajectory segment) only what follows the
    part it kept unchanged. A running sequence serves the same way, and prompts of one prefill that share a
    prefix compute it once (_waves): the episodes of an eval or a group start alike.

    A finished sequence's keys and values are copied out of the batch (parked, up to `park_budget` tokens
    in all, oldest dropped first, none older than PARK_STEPS decode steps) and its row is retired; one continued
    whole is dropped (the new row holds its tokens), one shared in part stays for other continuations.
    Parked sequences are found through keys of their first token and of every BLOCK-token prefix (the
    keys chain, as vLLM's block hashes do), so a lookup costs one key per block of the prompt. The next
    prompt to join takes over a retired row, so a batch that requests keep entering and leaving is
    never copied. When a quarter of the rows are retired, the cache is compacted: one copy, cheaper
    than decoding idle rows.
    """

    joinable = True
    reusable = True  # parked sequences stay valid until the weights change (the engine then makes a new decoder)
    RETIRED_SHARE = 0.25  # compact once this share of the cache's rows is retired
    PARK_STEPS = 512  # decode steps a finished sequence waits for its continuation
    BLOCK = 16  # tokens per prefix-index key: a lookup hashes the prompt once per block
    MAX_WAVES = 4  # forwards a batch's prompts wait on each other in, at most (_waves)

    def __init__(
        self, module: DecoderForCausalLM, step: Optional[StaticDecodeStep] = None, prefix_tokens: Optional[int] = None
    ):
        self.module = module
        self.step = step  # None: the dynamic step (the cache sliced to the slots in use)
        self.slot_bytes = KVCache.slot_bytes_for(module)  # one token's keys and values
        # Tokens parked sequences may hold in all (0: none parked); None: prefix_budget's default for the
        # memory free now, while this decoder's weights last.
        self.park_budget = prefix_cache_tokens(prefix_tokens, module.lm_head.weight.device, self.slot_bytes)
        self.cache: KVCache = None
        self.lengths = torch.zeros(0, dtype=torch.long)  # (rows,) tokens in the cache per row = next position
        self.live: List[int] = []  # cache row of each running sequence, in the caller's row order
        self.tokens: Dict[int, List[int]] = {}  # live row -> the tokens whose keys/values it holds
        self.parked: "OrderedDict[int, _Parked]" = OrderedDict()  # oldest first
        self.by_prefix: Dict[Tuple[int, int], List[int]] = {}  # prefix key (prefix_keys) -> parked ids, for lookups
        self.parked_tokens = 0
        self.reused: List[int] = []  # per prompt of the last prefill: leading tokens taken from a parked sequence
        self.steps = 0
        self._ids = 0

    def prefill(self, prompts: List[List[int]], budget: int = 0) -> torch.Tensor:
        self.reused = [0] * len(prompts)
        # Slots for the longest prompt and every token to sample, allocated once: decode steps never grow it.
        capacity = max(len(p) for p in prompts) + budget
        first, logits, placed = len(self.live), [], []
        rows_by_prompt: Optional[bool] = None
        waves = self._waves(prompts)
        for wave in waves:
            live = self._live_index()
            found = {i: self._cached_prefix(prompts[i], live) for i in wave}
            cached = {i: None if source is None else self._source_kv(source, n) for i, (source, n) in found.items()}
            for i in wave:
                self.reused[i] = found[i][1]
            # Rows are left-padded to the longest new part of their forward: one 120-token prompt among eighty
            # 16-token continuations would make every row 120 wide, so rows of unlike lengths go in separate
            # forwards.
            buckets = [[wave[j] for j in b] for b in length_buckets([len(prompts[i]) - self.reused[i] for i in wave])]
            if rows_by_prompt is None:
                # A new batch in several forwards: a row per prompt in the prompts' order, as one forward would
                # have left them (the decode step's cheaper path); each forward is written into its own rows.
                rows_by_prompt = self.cache is None and (len(buckets) > 1 or len(waves) > 1)
                if rows_by_prompt:
                    self.cache = KVCache.for_model(self.module, len(prompts), capacity)
                    self.lengths = torch.zeros(len(prompts), dtype=torch.long)
            for bucket in buckets:
                bucket.sort()  # one bucket (the usual case) keeps the prompts' order
                logits.append(
                    self._prefill_rows(
                        [prompts[i] for i in bucket],
                        [cached[i] for i in bucket],
                        [self.reused[i] for i in bucket],
                        budget,
                        capacity,
                        bucket if rows_by_prompt else None,
                    )
                )
                placed += bucket
            for source, n in found.values():
                whole = source is not None and source[0] == "parked" and source[1] in self.parked
                if whole and n == len(self.parked[source[1]].tokens):
                    self._unpark(source[1])  # continued whole: the new row holds its tokens now
        if placed == sorted(placed):
            return logits[0] if len(logits) == 1 else torch.cat(logits)
        # The caller reads rows in its prompts' order: put the new live rows and their logits back in it.
        order = sorted(range(len(placed)), key=placed.__getitem__)  # position in `placed` of prompt 0, 1, ...
        added = self.live[first:]
        self.live = self.live[:first] + [added[k] for k in order]
        return torch.cat(logits)[torch.tensor(order, device=logits[0].device)]

    def _waves(self, prompts: List[List[int]]) -> List[List[int]]:
        """The prompts' indices in the order their forwards run: a prompt that shares more with an earlier prompt
        of this batch than the prefix cache holds for it waits for that prompt's forward, then takes the shared
        prefix's keys and values from its row. An eval's episodes share the system prompt and the tool list, a
        group's episodes their whole prompt: computed once, not once per row, as vLLM's prefix cache shares
        them. At most MAX_WAVES forwards (before length buckets); one where nothing is shared."""
        keys_seen: Dict[Tuple[int, int], int] = {}  # prefix key -> the first prompt with it
        wave_of: List[int] = []
        live = self._live_index()
        for i, prompt in enumerate(prompts):
            keys = prefix_keys(prompt[: len(prompt) - 1], self.BLOCK)
            # The deepest whole block it shares with an earlier prompt (the keys chain: a deeper key implies the rest).
            hit = next((k for k in reversed(keys[1:]) if k in keys_seen), None)
            wave = 0
            if hit is not None and hit[0] * self.BLOCK > self._cached_prefix(prompt, live)[1]:
                wave = min(wave_of[keys_seen[hit]] + 1, self.MAX_WAVES - 1)
            wave_of.append(wave)
            for k in keys:
                keys_seen.setdefault(k, i)
        return [w for w in ([i for i, x in enumerate(wave_of) if x == n] for n in range(max(wave_of) + 1)) if w]

    def _live_index(self) -> Dict[Tuple[int, int], List[int]]:
        """Prefix keys of the running rows' tokens -> rows: a running sequence's keys and values serve a prompt
        that starts as it does, as a parked one's do."""
        index: Dict[Tuple[int, int], List[int]] = {}
        for r in self.live:
            for key in prefix_keys(self.tokens[r], self.BLOCK):
                index.setdefault(key, []).append(r)
        return index

    def _source_kv(self, source: Tuple[str, int], n: int) -> RowKV:
        kind, i = source
        kv = self.parked[i].kv if kind == "parked" else self.cache.extract(i)
        return kv.prefix(n)

    def _prefill_rows(
        self,
        prompts: List[List[int]],
        cached: List[Optional[RowKV]],
        done: List[int],
        budget: int,
        capacity: int,
        rows: Optional[List[int]],
    ) -> torch.Tensor:
        """One forward over `prompts` (the tokens after each one's `cached` prefix), joined to the batch as
        new live rows (`rows`, else retired or new ones); the logits after each prompt's last token.
        `capacity`: slots of the batch's cache when these rows start it."""
        device = self.module.lm_head.weight.device
        if self.cache is not None:  # these rows are copied into the batch's cache: room for their own only
            capacity = max(len(p) for p in prompts) + budget
        new = KVCache.for_model(self.module, len(prompts), capacity).load_rows(cached)
        ids, valid, positions = left_pad([p[n:] for p, n in zip(prompts, done)], device)
        positions = positions + torch.tensor(done, dtype=torch.long, device=device).unsqueeze(-1)
        # The lm_head over the last position only: a prompt's other logits are never read, and over a
        # 49k vocabulary they were a fifth of a SmolLM2 prefill's work.
        logits = self.module(ids, positions, new, valid, head=_last_logits)  # (B_new, V)
        lengths = torch.tensor([len(p) for p in prompts], dtype=torch.long)
        if self.cache is None:
            self.cache, self.lengths, rows = new, lengths, list(range(len(prompts)))
        else:
            self.cache.reserve(max(self.cache.used, new.used) + budget)
            rows = self._free_rows(len(prompts)) if rows is None else rows
            self.cache.join(new, torch.tensor(rows, dtype=torch.long, device=device))
            if self.cache.rows > self.lengths.shape[0]:
                self.lengths = torch.cat(
                    [self.lengths, torch.zeros(self.cache.rows - self.lengths.shape[0], dtype=torch.long)]
                )
            self.lengths[rows] = lengths
        for r, p in zip(rows, prompts):
            self.tokens[r] = list(p)
        self.live = self.live + rows
        return logits

    def decode(self, tokens: List[int]) -> torch.Tensor:
        if self.step is not None and self.step.enabled:
            logits = self.step.run(self.cache, self.live, tokens, self.lengths)  # (B, V)
        else:
            logits = self._dynamic_step(tokens)
        self.lengths = self.lengths + 1
        for r, t in zip(self.live, tokens):
            self.tokens[r].append(t)
        self.steps += 1
        while self.parked and self.steps - next(iter(self.parked.values())).step > self.PARK_STEPS:
            self._unpark(next(iter(self.parked)))
        return logits

    def _dynamic_step(self, tokens: List[int]) -> torch.Tensor:
        """The decode step over the slots in use (KVCache.begin): its shapes follow the cache."""
        device = self.module.lm_head.weight.device
        positions = self.lengths.to(device).unsqueeze(-1)  # (rows, 1)
        if self.live == list(range(self.cache.rows)):
            ids = torch.tensor(tokens, dtype=torch.long, device=device).unsqueeze(-1)  # (B, 1)
            return self.module(ids, positions, self.cache)[:, -1]  # (B, V)
        live = torch.tensor(self.live, dtype=torch.long, device=device)
        ids = torch.zeros(self.cache.rows, 1, dtype=torch.long, device=device)  # retired rows: token 0, masked
        ids[live, 0] = torch.tensor(tokens, dtype=torch.long, device=device)
        fed = torch.zeros(self.cache.rows, 1, dtype=torch.bool, device=device)
        fed[live, 0] = True
        return self.module(ids, positions, self.cache, fed)[live, -1]  # (B, V)

    def keep(self, rows: List[int]) -> None:
        kept = set(rows)
        finished = [r for i, r in enumerate(self.live) if i not in kept]
        for r in finished:
            tokens = self.tokens.pop(r)
            # One over the whole budget would push every parked sequence out, then itself: not copied at all.
            if len(tokens) <= self.park_budget:
                self._park(tokens, self.cache.extract(r))
        self.live = [self.live[i] for i in rows]
        if not self.live:
            self.cache, self.lengths = None, torch.zeros(0, dtype=torch.long)
            return
        if finished:
            self.cache.retire(torch.tensor(finished, dtype=torch.long, device=self.cache.valid.device))
        if self.cache.rows - len(self.live) >= self.RETIRED_SHARE * self.cache.rows:
            self._compact()

    def _compact(self) -> None:
        """Keep only the live rows, moved to rows 0, 1, ... in their order (one copy of the cache)."""
        index = torch.tensor(self.live, dtype=torch.long)
        self.cache.select(index.to(self.cache.valid.device))
        self.lengths = self.lengths[index]
        self.tokens = {new: self.tokens[old] for new, old in enumerate(self.live)}
        self.live = list(range(len(self.live)))

    def _cached_prefix(
        self, prompt: List[int], live: Dict[Tuple[int, int], List[int]]
    ) -> Tuple[Optional[Tuple[str, int]], int]:
        """The parked sequence or running row (`live`: _live_index) sharing the longest prefix with `prompt`, as
        ("parked", id) or ("live", row), and that prefix's length: at most all but the prompt's last token (the
        prefill returns the logits after it, so it is always computed). (None, 0) when none starts like the
        prompt. Ties go to parked sequences, the newest first."""
        limit = len(prompt) - 1
        keys = prefix_keys(prompt[:limit], self.BLOCK)
        for level in range(len(keys) - 1, -1, -1):  # the deepest block the prompt shares with any of them
            known = level * self.BLOCK or 1  # tokens the key covers
            best: Optional[Tuple[str, int]] = None
            shared = 0
            candidates = [("live", r) for r in live.get(keys[level], ())]
            candidates += [("parked", i) for i in self.by_prefix.get(keys[level], ())]
            for source in candidates:
                tokens = self.tokens[source[1]] if source[0] == "live" else self.parked[source[1]].tokens
                if tokens[:known] != prompt[:known]:
                    continue  # a hash collision
                n, end = known, min(len(tokens), limit)  # less than a block more: the next block's key differs
                while n < end and tokens[n] == prompt[n]:
                    n += 1
                if n >= shared:
                    best, shared = source, n
            if best is not None:
                return best, shared
        return None, 0

    def _park(self, tokens: List[int], kv: RowKV) -> None:
        self._ids += 1
        keys = prefix_keys(tokens, self.BLOCK)
        self.parked[self._ids] = _Parked(tokens, kv, self.steps, keys)
        for key in keys:
            self.by_prefix.setdefault(key, []).append(self._ids)
        self.parked_tokens += len(tokens)
        while self.parked_tokens > self.park_budget:
            self._unpark(next(iter(self.parked)))

    def _unpark(self, i: int) -> None:
        entry = self.parked.pop(i)
        self.parked_tokens -= len(entry.tokens)
        for key in entry.keys:
            self.by_prefix[key].remove(i)
            if not self.by_prefix[key]:
                del self.by_prefix[key]

    def _free_rows(self, count: int) -> List[int]:
        taken = set(self.live)
        free = [r for r in range(self.cache.rows) if r not in taken]
        return (free + list(range(self.cache.rows, self.cache.rows + count)))[:count]


def _last_logits(hidden: torch.Tensor, lm_head: torch.nn.Module) -> torch.Tensor:
    return lm_head(hidden[:, -1])  # (B, T, C) -> (B, V)


def length_buckets(lengths: List[int], spread: float = 2.0, slack: int = 32) -> List[List[int]]:
    """Indices of `lengths` grouped for padded forwards: by increasing length, a new group where a length
    is both over `spread` times and over `slack` tokens more than its group's shortest. Rows a few tokens
    apart share a forward (a forward has a fixed cost too); none is padded far past its own length."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    buckets: List[List[int]] = []
    for i in order:
        shortest = lengths[buckets[-1][0]] if buckets else 0
        if buckets and lengths[i] <= max(spread * shortest, shortest + slack):
            buckets[-1].append(i)
        else:
            buckets.append([i])
    return buckets


def prefix_keys(tokens: List[int], block: int) -> List[Tuple[int, int]]:
    """Keys of the prefixes of `tokens` a lookup can match: [(0, first token), (1, hash of the first block),
    (2, hash of the first two blocks), ...], each block's hash chained on the one before (vLLM's block
    hashes), so equal keys mean equal prefixes up to a hash collision, which the lookup rules out."""
    if not tokens:
        return []
    keys, chained = [(0, tokens[0])], 0
    for level in range(1, len(tokens) // block + 1):
        chained = hash((chained, tuple(tokens[(level - 1) * block : level * block])))
        keys.append((level, chained))
    return keys


class _Parked(NamedTuple):
    tokens: List[int]  # the tokens whose keys and values `kv` holds
    kv: RowKV
    step: int  # the decode step it was parked at
    keys: List[Tuple[int, int]]  # its prefix_keys, under which by_prefix finds it


class TransformersDecoder:
    """Any transformers causal LM (or PeftModel) with its own cache object, which we never edit:
    the batch is fixed at prefill and retired rows keep being fed a masked padding token."""

    joinable = False

    def __init__(self, module: Any):
        self.module = module
        self.past = None
        self.mask = None  # (B, S) attention mask over all tokens fed so far
        self.alive: List[int] = []  # batch rows still running, in row order
        self.reused: List[int] = []

    def prefill(self, prompts: List[List[int]], budget: int = 0) -> torch.Tensor:
        if self.past is not None:
            raise RuntimeError("TransformersDecoder: prefill into a running batch")
        device = next(self.module.parameters()).device
        ids, valid, positions = left_pad(prompts, device)
        out = self.module(input_ids=ids, attention_mask=valid.long(), position_ids=positions, use_cache=True)
        self.past, self.mask = out.past_key_values, valid.long()
        self.positions = positions[:, -1] + 1  # (B,)
        self.alive = list(range(len(prompts)))
        self.reused = [0] * len(prompts)  # no prefix cache: every prompt computed whole
        return out.logits[:, -1].float()

    def decode(self, tokens: List[int]) -> torch.Tensor:
        B = self.mask.shape[0]
        device = self.mask.device
        ids = torch.zeros(B, 1, dtype=torch.long, device=device)
        fed = torch.zeros(B, 1, dtype=torch.long, device=device)
        alive = torch.tensor(self.alive, dtype=torch.long, device=device)
        ids[alive, 0] = torch.tensor(tokens, dtype=torch.long, device=device)
        fed[alive, 0] = 1
        self.mask = torch.cat([self.mask, fed], dim=-1)
        out = self.module(
            input_ids=ids,
            attention_mask=self.mask,
            position_ids=self.positions.unsqueeze(-1),
            past_key_values=self.past,
            use_cache=True,
        )
        self.past = out.past_key_values
        self.positions = self.positions + 1
        return out.logits[alive, -1].float()

    def keep(self, rows: List[int]) -> None:
        self.alive = [self.alive[i] for i in rows]
