"""Batched incremental decoding over a KV cache, one class per backend, behind one small interface:

    decoder.prefill(prompts) -> (B_new, V)   add sequences; logits after each prompt's last token
    decoder.decode(tokens)   -> (B, V)       feed one token per running sequence, in row order
    decoder.keep(rows)                       retire every row not listed
    decoder.joinable                         whether prefill may add rows while others run

Prompts are left-padded, so every row's newest token sits in the same (last) cache slot.
"""
from __future__ import annotations

from typing import Any, List

import torch

from .kv_cache import KVCache
from .qwen2 import Qwen2ForCausalLM


def make_decoder(policy: Any):
    """The decoder for the policy's current module (read anew for every batch: the trainer may swap it)."""
    module = policy.module
    if isinstance(module, Qwen2ForCausalLM):
        return BuiltinDecoder(module)
    return TransformersDecoder(module)


def left_pad(prompts: List[List[int]], device) -> tuple:
    """(ids (B, T), valid (B, T) bool, positions (B, T)) with each prompt right-aligned."""
    T = max(len(p) for p in prompts)
    ids = torch.zeros(len(prompts), T, dtype=torch.long)
    valid = torch.zeros(len(prompts), T, dtype=torch.bool)
    for i, p in enumerate(prompts):
        ids[i, T - len(p):] = torch.tensor(p, dtype=torch.long)
        valid[i, T - len(p):] = True
    positions = (valid.long().cumsum(-1) - 1).clamp(min=0)  # (B, T): 0 at each prompt's first token
    return ids.to(device), valid.to(device), positions.to(device)


class BuiltinDecoder:
    """atk_trainer.qwen2 with its KVCache; new rows join a running batch in place.

    A finished sequence's cache row is retired (masked) and the next prompt to join takes it over, so
    a batch that requests keep entering and leaving is never copied. When a quarter of the rows sit
    retired with nothing joining, the cache is compacted: one copy, cheaper than decoding idle rows.
    """

    joinable = True
    RETIRED_SHARE = 0.25  # compact once this share of the cache's rows is retired

    def __init__(self, module: Qwen2ForCausalLM):
        self.module = module
        self.cache: KVCache = None
        self.lengths = torch.zeros(0, dtype=torch.long)  # (rows,) tokens in the cache per row = next position
        self.live: List[int] = []  # cache row of each running sequence, in the caller's row order

    def prefill(self, prompts: List[List[int]]) -> torch.Tensor:
        device = self.module.lm_head.weight.device
        ids, valid, positions = left_pad(prompts, device)
        new = KVCache.for_model(self.module, len(prompts))
        logits = self.module(ids, positions, new, valid)[:, -1]  # (B_new, V)
        lengths = valid.sum(-1).cpu()
        if self.cache is None:
            self.cache, self.lengths, self.live = new, lengths, list(range(len(prompts)))
            return logits
        taken = set(self.live)
        free = [r for r in range(self.cache.rows) if r not in taken]
        rows = (free + list(range(self.cache.rows, self.cache.rows + len(prompts))))[: len(prompts)]
        self.cache.join(new, torch.tensor(rows, dtype=torch.long, device=device))
        if self.cache.rows > self.lengths.shape[0]:
            self.lengths = torch.cat([self.lengths, torch.zeros(self.cache.rows - self.lengths.shape[0], dtype=torch.long)])
        self.lengths[rows] = lengths
        self.live = self.live + rows
        return logits

    def decode(self, tokens: List[int]) -> torch.Tensor:
        device = self.module.lm_head.weight.device
        positions = self.lengths.to(device).unsqueeze(-1)  # (rows, 1)
        if self.live == list(range(self.cache.rows)):
            ids = torch.tensor(tokens, dtype=torch.long, device=device).unsqueeze(-1)  # (B, 1)
            logits = self.module(ids, positions, self.cache)[:, -1]  # (B, V)
        else:
            live = torch.tensor(self.live, dtype=torch.long, device=device)
            ids = torch.zeros(self.cache.rows, 1, dtype=torch.long, device=device)  # retired rows: token 0, masked
            ids[live, 0] = torch.tensor(tokens, dtype=torch.long, device=device)
            fed = torch.zeros(self.cache.rows, 1, dtype=torch.bool, device=device)
            fed[live, 0] = True
            logits = self.module(ids, positions, self.cache, fed)[live, -1]  # (B, V)
        self.lengths = self.lengths + 1
        return logits

    def keep(self, rows: List[int]) -> None:
        kept = set(rows)
        retired = [row for i, row in enumerate(self.live) if i not in kept]
        self.live = [self.live[i] for i in rows]
        if not self.live:
            self.cache, self.lengths = None, torch.zeros(0, dtype=torch.long)
            return
        device = self.cache.valid.device
        if retired:
            self.cache.retire(torch.tensor(retired, dtype=torch.long, device=device))
        if self.cache.rows - len(self.live) >= self.RETIRED_SHARE * self.cache.rows:
            index = torch.tensor(self.live, dtype=torch.long)
            self.cache.select(index.to(device))
            self.lengths = self.lengths[index]
            self.live = list(range(len(self.live)))


class TransformersDecoder:
    """Any transformers causal LM (or PeftModel) with its own cache object, which we never edit:
    the batch is fixed at prefill and retired rows keep being fed a masked padding token."""

    joinable = False

    def __init__(self, module: Any):
        self.module = module
        self.past = None
        self.mask = None  # (B, S) attention mask over all tokens fed so far
        self.alive: List[int] = []  # batch rows still running, in row order

    def prefill(self, prompts: List[List[int]]) -> torch.Tensor:
        if self.past is not None:
            raise RuntimeError("TransformersDecoder: prefill into a running batch")
        device = next(self.module.parameters()).device
        ids, valid, positions = left_pad(prompts, device)
        out = self.module(input_ids=ids, attention_mask=valid.long(), position_ids=positions, use_cache=True)
        self.past, self.mask = out.past_key_values, valid.long()
        self.positions = positions[:, -1] + 1  # (B,)
        self.alive = list(range(len(prompts)))
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
            input_ids=ids, attention_mask=self.mask, position_ids=self.positions.unsqueeze(-1),
            past_key_values=self.past, use_cache=True,
        )
        self.past = out.past_key_values
        self.positions = self.positions + 1
        return out.logits[alive, -1].float()

    def keep(self, rows: List[int]) -> None:
        self.alive = [self.alive[i] for i in rows]
