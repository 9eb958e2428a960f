"""The Trainer: one object the server drives, reading top to bottom like nanoGPT.

    trainer = Trainer(policy, parse_config({...}))   # seed, threads, LoRA, reference, AdamW, schedule
    metrics = trainer.step(batch_json)               # forward, loss, backward, clip, step -> metrics
    trainer.save(dir); trainer.load(dir)             # weights or adapter + trainer_state.pt, exact resume

`policy` is the modeling façade (`atk_trainer.model.modeling.Policy`): `.module` (nn.Module), `.config`,
`.backend`, `.logits(input_ids (B, T)) -> (B, T, V)` and `.save_pretrained(dir)`. The trainer changes
the module's weights in place, so an engine serving the same Policy serves the new weights at once.

With `peers` (atk_trainer.train.distributed, more than one torchrun rank) each rank trains on its share of
the micro-batches and the gradients are summed across ranks; on CUDA `train_policy` is an FSDP-wrapped
copy and `policy` stays the unsharded serving copy, refreshed after every step (distributed.py).
"""
from __future__ import annotations

import copy
import math
import random
import sys
import time
from contextlib import nullcontext
from typing import Any, Dict, List, Optional, Tuple

import torch

from . import checkpoint, memory, precision, sync_fault
from . import lora as lora_lib
from .batch import BatchError, MicroBatch, TrainBatch, build_batch
from .config import TrainConfig
from .distributed import clean_name
from .grad_checkpoint import decoder_layers, enable_gradient_checkpointing
from .loss import (
    behaviour_trust_region,
    cispo_loss,
    count_sequences,
    drop_from_count,
    gspo_loss,
    kl_penalty,
    mismatch_weights,
    policy_gradient_loss,
    reinforce_loss,
    sequence_ids,
    sft_loss,
    token_entropy,
    token_logprobs,
)


class Trainer:
    def __init__(self, policy: Any, config: TrainConfig, peers: Any = None):
        self.config = config
        self.peers = peers  # distributed.Peers with more than one rank, else None
        # -- seed, threads, device, dtype ------------------------------------------------------------
        random.seed(config.seed)
        torch.manual_seed(config.seed)
        torch.set_num_threads(config.threads)
        self.policy = policy
        self.vocab_size = int(policy.config["vocab_size"])
        self.device = next(policy.module.parameters()).device
        self.stale_layer = sync_fault.stale_layer(policy.module)  # None unless ATK_SYNC_FAULT=skip_layer (tests)
        # bf16 autocast on CUDA unless float32 is forced; CPU trains in the parameters' dtype.
        self.autocast = self.device.type == "cuda" and config.dtype != "float32"
        # -- LoRA or full fine-tuning ---------------------------------------------------------------------
        if config.lora is not None:
            use_peft = policy.backend == "transformers" and lora_lib.peft_available()
            policy.module = lora_lib.apply_lora(policy.module, config.lora, use_peft)
        if config.gradient_checkpointing:
            enable_gradient_checkpointing(policy.module)
        if config.compile:
            memory.compile_layers(policy.module)
        # -- weights in the dtype they need (CUDA only; precision.py) ------------------------------------
        # FSDP shards the weights over several CUDA ranks (gloo ranks on CPU each keep a whole copy).
        self.sharded = peers is not None and self.device.type == "cuda"
        lora = config.lora is not None
        frozen = None if self.sharded else precision.frozen_base_dtype(self.device, self.autocast, lora)
        if frozen is not None:
            precision.cast_frozen(policy.module, frozen)
        self.weights_dtype = precision.full_weights_dtype(self.device, self.autocast, lora, config.weights_dtype)
        if self.weights_dtype is not None:
            if self.sharded:
                raise ValueError("weights_dtype: bfloat16 is for one GPU; with several, FSDP keeps float32 shards")
            policy.module.to(self.weights_dtype)
        # -- frozen reference for the KL penalty: the base model without adapters, or a copy --------
        self.reference: Optional[Any] = None
        if config.kl_coef > 0 and config.lora is None:
            self.reference = copy.copy(policy)
            self.reference.module = copy.deepcopy(policy.module).eval().requires_grad_(False)
        # -- more than one GPU: train an FSDP-sharded copy; rank 0's `policy` stays whole, for serving -
        dims = {name: p.dim() for name, p in policy.module.named_parameters()}  # before FSDP flattens them
        self.train_policy = policy
        if config.pack_sequences and (policy.backend != "builtin" or self.sharded):
            raise ValueError(
                "pack_sequences: packed rows need the builtin backend on one device (not transformers, not FSDP)"
            )
        if self.sharded:
            self.train_policy = copy.copy(policy)
            module = copy.deepcopy(policy.module) if peers.leader else policy.module
            layers = decoder_layers(module)
            layer_cls = type(layers[0]) if layers is not None and len(layers) else None
            self.train_policy.module = peers.shard(module, layer_cls, bf16=self.autocast)
        # The loss is normalised over the whole batch, so gradients must be summed over ranks; FSDP
        # averages them (as DDP does), so each rank's loss is scaled by the world size to undo that.
        self.grad_scale = float(peers.size) if self.sharded else 1.0
        named = [(clean_name(n), p) for n, p in self.train_policy.module.named_parameters() if p.requires_grad]
        self.params = [p for _, p in named]
        # -- optimizer: AdamW, no weight decay on vectors (norm gains, biases) -----------------------
        decay = [p for n, p in named if dims[n] >= 2]
        no_decay = [p for n, p in named if dims[n] < 2]
        groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
        adamw = torch.optim.AdamW if self.weights_dtype is None else precision.Bf16AdamW
        self.optimizer = adamw(
            [g for g in groups if g["params"]],
            lr=config.learning_rate,
            betas=(config.adam_beta1, config.adam_beta2),
            eps=config.adam_eps,
        )
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda step: lr_factor(step, config))
        # Unset: sized from the memory left once gradients and AdamW's two fp32 moments exist (CUDA).
        optimizer_bytes = 12 * sum(p.numel() for p in self.params)
        self.micro_batch_tokens = memory.resolve_micro_batch_tokens(
            config.micro_batch_tokens, self.device, policy.config, config.gradient_checkpointing, optimizer_bytes
        )
        self.step_count = 0  # train steps done (the schedule's position)
        self.policy_version = 0  # bumps once per train step; stamped on the engine's outputs

    # -- one train step ----------------------------------------------------------------------------------
    def step(self, batch_json: Any) -> Dict[str, float]:
        """Train on one batch (`updates_per_step` optimizer updates); returns the step's metrics."""
        start = time.perf_counter()
        c = self.config
        batch = build_batch(
            batch_json,
            c.loss,
            c.loss_aggregation,
            self.micro_batch_tokens,
            c.loss_norm_constant,
            pack_sequences=c.pack_sequences,
            model_width=int(self.policy.config.get("hidden_size", 0)),
        )
        # On CUDA an out-of-range id is a device-side assert that breaks the process (and hangs other ranks).
        largest = max(int(mb.input_ids.max()) for mb in batch.micro_batches)
        if largest >= self.vocab_size:
            raise BatchError(
                f"batch: token id {largest} is outside the model's vocabulary (vocab_size {self.vocab_size})"
            )
        lr = self.scheduler.get_last_lr()[0]
        # trainer logprobs before the update
        first_logp: List[Optional[torch.Tensor]] = [None] * len(batch.micro_batches)
        ref_logp: List[Optional[torch.Tensor]] = [None] * len(batch.micro_batches)
        totals: Dict[str, float] = {}
        module = self.train_policy.module
        module.train()
        try:
            # Out of memory in a micro-batch names its shape; in the optimizer (its state is allocated
            # on the first step) or the gradient sum, the knobs alone.
            with memory.out_of_memory_names_the_knobs(self.micro_batch_tokens):
                self._updates(batch, first_logp, ref_logp, totals)
        finally:
            # The engine samples from the same module: LoRA dropout must be off outside training,
            # and a failed step must not leave half-accumulated gradients for the next one.
            module.eval()
            self.optimizer.zero_grad(set_to_none=True)
        if self.peers is not None:
            parts = self.peers.gather_totals(totals)
            totals = {}
            for part in parts:
                _add(totals, part)
            totals["grad_norm"] = parts[0]["grad_norm"]  # already global: every rank computed the same
            if self.sharded:
                self.peers.refresh_serving(module, self.policy.module if self.peers.leader else None)
        mismatch_max = totals.pop("mismatch_max", 0.0)
        self.scheduler.step()
        self.step_count += 1
        self.policy_version += 1
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        return self._metrics(batch, totals, mismatch_max, lr, seconds)

    def _updates(
        self,
        batch: TrainBatch,
        first_logp: List[Optional[torch.Tensor]],
        ref_logp: List[Optional[torch.Tensor]],
        totals: Dict[str, float],
    ) -> None:
        """`updates_per_step` optimizer updates on the batch: micro-batches, gradient clip, step."""
        c = self.config
        if batch.loss == "pg" and c.mismatch is not None and c.mismatch.masked_tokens == "drop":
            batch = self._drop_masked_from_counts(batch, first_logp)
        for update in range(c.updates_per_step):
            self.optimizer.zero_grad(set_to_none=True)
            if self.peers is None:
                for i, mb in enumerate(batch.micro_batches):
                    _add(totals, self._micro_step(batch, mb, update, i, first_logp, ref_logp))
                grad_norm = torch.nn.utils.clip_grad_norm_(self.params, c.grad_clip)
            else:
                grad_norm = self._distributed_update(batch, update, first_logp, ref_logp, totals)
            totals["grad_norm"] = totals.get("grad_norm", 0.0) + float(grad_norm)
            self.optimizer.step()

    @torch.no_grad()
    def _drop_masked_from_counts(self, batch: TrainBatch, first_logp: List[Optional[torch.Tensor]]) -> TrainBatch:
        """mismatch.masked_tokens drop: the tokens the mismatch mask rejects leave the aggregation's counts, which
        span the whole batch, so every micro-batch's pre-update logprobs come first (a forward without gradient,
        kept as first_logp), then each micro-batch's weights are redone over the kept tokens (loss.drop_from_count)."""
        m = self.config.mismatch
        count = len(batch.micro_batches)
        mine = range(count) if self.peers is None else self.peers.my_micro_batches(count)
        kept: Dict[int, Tuple[torch.Tensor, torch.Tensor]] = {}
        totals = {"kept_tokens": 0.0, "kept_sequences": 0.0}
        for i in mine:
            if i is None:  # fewer micro-batches here than on rank 0: join a sharded forward's collectives
                self._token_stats(self.train_policy, torch.zeros((1, 2), dtype=torch.int64, device=self.device), None)
                continue
            mb = batch.micro_batches[i]
            ids = mb.input_ids.to(self.device)  # (B, T)
            segments = None if mb.segments is None else mb.segments.to(self.device)  # (B, T)
            logp = self._token_stats(self.train_policy, ids, segments)[0]  # (B, T)
            first_logp[i] = logp
            mask = mb.loss_mask.to(self.device)  # (B, T)
            seq = sequence_ids((ids.shape[0], ids.shape[1]), segments, self.device)  # (B, T)
            behaviour = mb.behaviour_logprobs.to(self.device)  # (B, T)
            _, outside = mismatch_weights(logp, behaviour, mask, seq, m.mode, m.level, m.low, m.high)
            keep = mask * (~outside).to(mask.dtype)  # (B, T)
            kept[i] = (keep, seq)
            totals["kept_tokens"] += float(keep.sum())
            totals["kept_sequences"] += count_sequences(keep, seq)
        if self.peers is not None:
            parts = self.peers.gather_totals(totals)
            totals = {key: sum(part[key] for part in parts) for key in totals}
        counts = (float(batch.tokens), totals["kept_tokens"], float(batch.sequences), totals["kept_sequences"])
        micro_batches = list(batch.micro_batches)
        for i, (keep, seq) in kept.items():
            mb = micro_batches[i]
            mask = mb.loss_mask.to(self.device)  # (B, T)
            weights = drop_from_count(mb.weights.to(self.device), mask, keep, seq, self.config.loss_aggregation, counts)
            micro_batches[i] = mb._replace(weights=weights)
        return batch._replace(micro_batches=micro_batches)

    def _distributed_update(
        self,
        batch: TrainBatch,
        update: int,
        first_logp: List[Optional[torch.Tensor]],
        ref_logp: List[Optional[torch.Tensor]],
        totals: Dict[str, float],
    ) -> torch.Tensor:
        """This rank's micro-batches, then gradients summed over ranks and clipped; returns the global norm."""
        failure: Optional[BaseException] = None
        try:
            for i in self.peers.my_micro_batches(len(batch.micro_batches)):
                if i is None:  # fewer micro-batches here than on rank 0: join the collectives with nothing
                    ids = torch.zeros((1, 2), dtype=torch.int64, device=self.device)
                    logp, _, _ = self._token_stats(self.train_policy, ids, None)
                    if update == 0 and self.config.kl_coef > 0 and self.reference is None:
                        # with LoRA, a forward of the sharded module: its all-gathers too
                        self._reference_logprobs(ids, None)
                    (logp.sum() * 0.0).backward()
                else:
                    _add(totals, self._micro_step(batch, batch.micro_batches[i], update, i, first_logp, ref_logp))
        except Exception as e:  # noqa: BLE001 - re-raised by check() on this rank, reported on the others
            failure = e
        self.peers.check(failure)
        if self.sharded:
            return self.train_policy.module.clip_grad_norm_(self.config.grad_clip)
        self.peers.sum_gradients(self.params)
        return torch.nn.utils.clip_grad_norm_(self.params, self.config.grad_clip)

    def _micro_step(
        self,
        batch: TrainBatch,
        mb: MicroBatch,
        update: int,
        i: int,
        first_logp: List[Optional[torch.Tensor]],
        ref_logp: List[Optional[torch.Tensor]],
    ) -> Dict[str, float]:
        """Forward, loss and backward of one micro-batch; returns sums that become the step's metrics."""
        with memory.out_of_memory_names_the_knobs(self.micro_batch_tokens, tuple(mb.input_ids.shape)):
            return self._forward_backward(batch, mb, update, i, first_logp, ref_logp)

    def _forward_backward(
        self,
        batch: TrainBatch,
        mb: MicroBatch,
        update: int,
        i: int,
        first_logp: List[Optional[torch.Tensor]],
        ref_logp: List[Optional[torch.Tensor]],
    ) -> Dict[str, float]:
        c = self.config
        ids = mb.input_ids.to(self.device)  # (B, T)
        mask = mb.loss_mask.to(self.device)  # (B, T)
        weights = mb.weights.to(self.device)  # (B, T)
        segments = None if mb.segments is None else mb.segments.to(self.device)  # (B, T)
        logp, entropy, top1 = self._token_stats(self.train_policy, ids, segments)  # (B, T) each
        stats: Dict[str, float] = {}
        if update == 0 and first_logp[i] is None:
            first_logp[i] = logp.detach()
        if batch.loss == "sft":
            per_token = sft_loss(logp)  # (B, T)
            stats["top1_tokens"] = float((top1.float() * mask).sum())
        else:
            behaviour = mb.behaviour_logprobs.to(self.device)  # (B, T)
            advantages = mb.advantages.to(self.device)  # (B, T)
            seq = sequence_ids((ids.shape[0], ids.shape[1]), segments, self.device)  # (B, T)
            # The ratio's old policy: the engine's logprobs for on-policy data; the trainer's own pre-update
            # logprobs when a mismatch correction handles the engine/trainer gap instead (decoupled PPO), and
            # always for GSPO, whose clip range (~3e-4) is narrower than a bf16 engine's gap to the trainer.
            old = first_logp[i] if c.mismatch is not None or c.policy_loss == "gspo" else behaviour
            if c.policy_loss == "gspo":
                per_token, clipped = gspo_loss(logp, old, advantages, mask, seq, c.clip_low, c.clip_high)
            elif c.policy_loss == "cispo":
                per_token, clipped = cispo_loss(logp, old, advantages, c.clip_low, c.clip_high)
            elif c.policy_loss == "reinforce":
                per_token, clipped = reinforce_loss(logp, advantages)
            else:
                per_token, clipped = policy_gradient_loss(logp, old, advantages, c.clip_low, c.clip_high, c.dual_clip)
            m = c.mismatch
            if m is not None:
                correction, masked = mismatch_weights(
                    first_logp[i], behaviour, mask, seq, m.mode, m.level, m.low, m.high
                )  # (B, T) each
                per_token = per_token * correction
                if m.trust_region and c.policy_loss == "ppo":
                    # The trust region stays anchored at the behaviour policy (see behaviour_trust_region).
                    outside = behaviour_trust_region(logp, behaviour, advantages, c.clip_low, c.clip_high)
                    per_token = torch.where(outside, torch.zeros_like(per_token), per_token)
                    clipped = clipped | outside
                if m.mode != "reject":  # the importance weight's mean (0 on masked tokens)
                    stats["tis_weight_sum"] = float((correction * mask).sum())
                if m.mode != "tis":
                    stats["mismatch_masked_tokens"] = float((masked.float() * mask).sum())
            stats["clipped_tokens"] = float((clipped.float() * mask).sum())
            if update == 0:
                gap = (first_logp[i] - behaviour).abs() * mask  # (B, T)
                stats["mismatch_sum"] = float(gap.sum())
                stats["mismatch_max"] = float(gap.max())
        if c.kl_coef > 0:
            if ref_logp[i] is None:
                ref_logp[i] = self._reference_logprobs(ids, segments)
            kl = kl_penalty(logp, ref_logp[i], c.kl_estimator)  # (B, T)
            per_token = per_token + c.kl_coef * kl
            stats["kl_sum"] = float((kl.detach() * mask).sum())
        loss = (per_token * weights).sum()
        (loss * self.grad_scale).backward()
        stats["loss"] = float(loss.detach())
        stats["entropy_sum"] = float((entropy * mask).sum())
        return stats

    @torch.no_grad()
    def sequence_logprobs(self, token_ids: List[int]) -> List[float]:
        """log p(ids[t] | ids[:t]) for t >= 1 under the trainer's weights, computed as a train step computes
        them (the same forward and autocast): what atk compares an engine's logprobs with after a weight sync.
        Rank 0's `policy` holds the whole weights (with FSDP, the serving copy save writes), so no other rank
        takes part."""
        ids = torch.tensor([token_ids], device=self.policy.device)  # (1, T)
        with self._autocast():
            logp = self.policy.token_stats(ids)[0]  # (1, T) float32, 0 at t = 0
        return logp[0, 1:].tolist()

    @torch.no_grad()
    def _reference_logprobs(self, ids: torch.Tensor, segments: Optional[torch.Tensor]) -> torch.Tensor:
        if self.reference is not None:
            return self._token_stats(self.reference, ids, segments)[0]  # (B, T)
        with lora_lib.adapters_disabled(self.train_policy.module):
            return self._token_stats(self.train_policy, ids, segments)[0]

    def _token_stats(
        self, policy: Any, ids: torch.Tensor, segments: Optional[torch.Tensor]
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(logp, entropy, top1) (B, T): chunked from the hidden states (Policy.token_stats), except
        under FSDP, whose sharded lm_head is only gathered for the module's own forward: full logits there."""
        with self._autocast():
            if not self.sharded:
                return policy.token_stats(ids, segments)
            logits = policy.logits(ids)  # (B, T, V)
        top1 = torch.nn.functional.pad(logits[:, :-1].argmax(-1) == ids[:, 1:], (1, 0))  # (B, T)
        return token_logprobs(logits, ids), token_entropy(logits), top1

    def _autocast(self):
        return torch.autocast("cuda", dtype=torch.bfloat16) if self.autocast else nullcontext()

    def _metrics(
        self, batch: TrainBatch, totals: Dict[str, float], mismatch_max: float, lr: float, seconds: float
    ) -> Dict[str, float]:
        """Means over trained tokens (and over updates, when there are several)."""
        updates = self.config.updates_per_step
        per_token = batch.tokens * updates
        metrics: Dict[str, float] = {
            "loss": totals["loss"] / updates,
            "entropy": totals["entropy_sum"] / per_token,
            "grad_norm": totals["grad_norm"] / updates,
            "lr": lr,
            "tokens": batch.tokens,
            "sequences": batch.sequences,
            "micro_batches": len(batch.micro_batches),
            "padded_tokens": batch.padded_tokens,
            "seconds": seconds,
            "tokens_per_s": batch.tokens * updates / seconds,
            "policy_version": self.policy_version,
        }
        peak = peak_rss_mb()
        if peak is not None:  # the process's high-water mark: model, optimizer, activations and the embedded engine
            metrics["peak_rss_mb"] = peak
        if batch.loss == "sft":
            # share of the reference's tokens the model already ranks first: what greedy decoding would copy
            metrics["token_accuracy"] = totals["top1_tokens"] / per_token
        if batch.loss == "pg":
            metrics["clip_fraction"] = totals["clipped_tokens"] / per_token
            metrics["mismatch_mean"] = totals["mismatch_sum"] / batch.tokens
            metrics["mismatch_max"] = mismatch_max
        if "tis_weight_sum" in totals:
            metrics["tis_weight_mean"] = totals["tis_weight_sum"] / per_token
        if "mismatch_masked_tokens" in totals:
            # share of trained tokens left out because their trainer/engine ratio left [low, high]
            metrics["mismatch_masked_fraction"] = totals["mismatch_masked_tokens"] / per_token
        if "kl_sum" in totals:
            metrics["kl"] = totals["kl_sum"] / per_token
        return metrics

    # -- checkpoints (checkpoint.py) ---------------------------------------------------------------------
    def save(self, directory: str, weights_only: bool = False, dtype: Optional[torch.dtype] = None) -> Dict[str, Any]:
        """See checkpoint.save: weights or adapter, plus trainer_state.pt unless `weights_only`, atomically."""
        return checkpoint.save(self, directory, weights_only, dtype)

    def load(self, directory: str) -> Dict[str, Any]:
        """See checkpoint.load: exact resume from what `save` wrote."""
        return checkpoint.load(self, directory)


def _add(totals: Dict[str, float], stats: Dict[str, float]) -> None:
    """Accumulate one micro-batch's stats: sums, except mismatch_max, a max."""
    for key, value in stats.items():
        if key == "mismatch_max":
            totals[key] = max(totals.get(key, 0.0), value)
        else:
            totals[key] = totals.get(key, 0.0) + value


def lr_factor(step: int, config: TrainConfig) -> float:
    """Multiplier of the peak learning rate at train step `step`: linear warmup, then constant or cosine to 0."""
    if step < config.warmup_steps:
        return (step + 1) / (config.warmup_steps + 1)
    if config.lr_schedule == "constant":
        return 1.0
    progress = min(1.0, (step - config.warmup_steps) / (config.total_steps - config.warmup_steps))
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def peak_rss_mb() -> Optional[float]:
    """This process's peak resident memory in MiB (Linux and macOS), or None where it cannot be read."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return round(peak / (1 << 20 if sys.platform == "darwin" else 1 << 10), 1)
