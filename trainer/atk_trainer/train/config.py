"""The training configuration: one typed dataclass and strict override parsing.

Keys equal the recipe's `algorithm` and `model.trainer` keys (src/recipe/schema.ts), snake_case on
both sides of the TypeScript/Python boundary. Overrides arrive as JSON from the control API; they
are checked field by field (unknown key or wrong type -> ConfigError) and never evaluated.
"""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

LOSSES = ("pg", "sft")
POLICY_LOSSES = ("ppo", "gspo", "cispo", "reinforce")
MISMATCH_MODES = ("tis", "mask", "reject")
MISMATCH_LEVELS = ("token", "sequence", "geometric")
MASKED_TOKENS = ("count", "drop")
AGGREGATIONS = (
    "token-sum",
    "token-mean",
    "seq-mean-token-sum",
    "seq-mean-token-mean",
    "seq-mean-token-sum-norm",
)
LR_SCHEDULES = ("constant", "cosine")
KL_ESTIMATORS = ("k1", "k2", "k3")
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("auto", "float32", "bfloat16")


class ConfigError(ValueError):
    """An override names an unknown key or has the wrong type or value (the server answers 400)."""


@dataclass
class LoraConfig:
    rank: int = 16  # r: adapter rank; more = more capacity and memory
    alpha: float = 32.0  # the update is scaled by alpha / rank
    dropout: float = 0.0  # dropout on the adapter input (uses the torch RNG)
    target_modules: List[str] = field(  # Linear layer names (last path component) that get adapters
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )
    # decoder layers (indices) whose target modules get adapters, peft's option of that name; None = all
    layers_to_transform: Optional[List[int]] = None


@dataclass
class MismatchConfig:
    """Correction by the trainer/engine probability ratio rho = exp(trainer - engine logp) (loss.mismatch_weights)."""

    # tis: weight clip(rho, low, high); mask: weight rho inside [low, high], 0 outside (IcePop); reject: 1 inside
    mode: str = "tis"
    # token: rho per token; sequence: the product over a sequence's trained tokens; geometric: their geometric mean
    level: str = "token"
    low: float = 0.0  # lower bound of rho (tis: 0 = no lower clip)
    high: float = 2.0  # upper bound of rho
    # mask/reject: a token outside [low, high] stays in the aggregation's counts (count, IcePop) or leaves them (drop)
    masked_tokens: str = "count"
    # ppo: no gradient where the ratio to the engine's logprobs is past PPO's clip (loss.behaviour_trust_region)
    trust_region: bool = False


@dataclass
class TrainConfig:
    # what to optimise
    loss: str = "pg"  # default loss when a batch names none: "pg" (policy gradient) or "sft" (masked cross-entropy)
    # token-mean | seq-mean-token-sum | seq-mean-token-mean | seq-mean-token-sum-norm (Dr.GRPO)
    loss_aggregation: str = "token-mean"
    # seq-mean-token-sum-norm divisor (max generation length); None = longest trained span in the batch
    loss_norm_constant: Optional[int] = None
    clip_low: float = 0.2  # PPO epsilon below 1 for the importance ratio
    clip_high: float = 0.28  # PPO epsilon above 1 (clip-higher keeps exploration)
    # the pg loss: ppo (clipped token ratio), gspo (clipped sequence ratio), cispo (clipped, detached weight),
    # reinforce (-A log pi)
    policy_loss: str = "ppo"
    dual_clip: Optional[float] = None  # ppo: dual-clip's c (> 1) bounding the loss of A < 0 tokens; None = off
    # trainer/engine mismatch correction; None = the engine's logprobs are the PPO ratio's old policy.
    # The override key tis_cap: C is the same as mismatch {mode: tis, level: token, low: 0, high: C, trust_region}.
    mismatch: Optional[MismatchConfig] = None
    kl_coef: float = 0.0  # weight of the KL penalty to the frozen initial policy; 0 = no reference model kept
    kl_estimator: str = "k3"  # k1 (log ratio), k2 (half its square) or k3 (unbiased, non-negative); Schulman 2020
    # optimiser
    learning_rate: float = 1e-5  # AdamW peak learning rate
    lr_schedule: str = "constant"  # constant | cosine (to 0 at total_steps) after warmup
    warmup_steps: int = 0  # linear warmup from 0 over this many optimizer updates
    total_steps: int = 0  # cosine length in optimizer updates; required (> warmup_steps) for cosine
    weight_decay: float = 0.0  # AdamW decoupled weight decay
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-8
    grad_clip: float = 1.0  # clip the global gradient norm to this value
    # padded tokens (B*T) per forward pass; None: 8192 on CPU, sized from free GPU memory on CUDA
    micro_batch_tokens: Optional[int] = None
    # sequences end to end in rows (the longest sequence or the model width) with a block-diagonal mask:
    # no padding (builtin backend)
    pack_sequences: bool = False
    updates_per_step: int = 1  # optimizer updates per train step on the same batch (> 1 = PPO-style reuse)
    lora: Optional[LoraConfig] = None  # train a LoRA adapter instead of all weights
    # machine
    device: str = "auto"  # auto | cpu | cuda (the policy's device decides where training runs)
    dtype: str = "auto"  # auto = bf16 autocast on CUDA, fp32 on CPU; float32 turns autocast off
    # full fine-tuning on CUDA: float32 master weights, or bfloat16 weights with float32 AdamW state (less memory)
    weights_dtype: str = "float32"
    threads: int = 1  # torch CPU threads; one beat two on a 2-core machine (bench/trainer-train.py)
    gradient_checkpointing: bool = False  # recompute activations in backward: less memory, ~30% more compute
    compile: bool = False  # torch.compile each decoder layer (torch >= 2.2): faster steps after a slow first one
    # on CUDA the engine's decode step is captured as CUDA graphs (builtin backend); no effect on CPU
    cuda_graphs: bool = True
    seed: int = 0  # seeds python/torch RNGs (LoRA init, dropout, random model init)


def parse_config(overrides: Optional[Mapping[str, Any]] = None) -> TrainConfig:
    """Build a TrainConfig from JSON overrides; raises ConfigError on unknown keys, wrong types or values."""
    config = _build(TrainConfig, _tis_cap_as_mismatch(overrides or {}), "")
    _check_values(config)
    return config


def _tis_cap_as_mismatch(overrides: Mapping[str, Any]) -> Mapping[str, Any]:
    """The older key tis_cap: C is token-level truncated importance sampling at C."""
    if not isinstance(overrides, Mapping) or "tis_cap" not in overrides:
        return overrides
    rest = {k: v for k, v in overrides.items() if k != "tis_cap"}
    cap = overrides["tis_cap"]
    if cap is None:
        return rest
    if rest.get("mismatch") is not None:
        raise ConfigError("tis_cap: give mismatch or tis_cap, not both (tis_cap C is mismatch tis, token, 0, C)")
    if isinstance(cap, bool) or not isinstance(cap, (int, float)) or cap <= 0:
        raise ConfigError(f"tis_cap: must be a number > 0, got {cap!r}")
    return {
        **rest,
        "mismatch": {"mode": "tis", "level": "token", "low": 0.0, "high": float(cap), "trust_region": True},
    }


def config_dict(config: TrainConfig) -> Dict[str, Any]:
    """The config as plain JSON-able data (stored in checkpoints)."""
    return dataclasses.asdict(config)


def _build(cls: type, data: Mapping[str, Any], prefix: str) -> Any:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{prefix or 'config'}: expected an object, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"unknown key {prefix}{unknown[0]} (known: {', '.join(sorted(names))})")
    values = {key: _coerce(hints[key], value, prefix + key) for key, value in data.items()}
    return cls(**values)


_NONE_TYPE = type(None)  # the other member of Optional[X]'s Union


def _coerce(hint: Any, value: Any, key: str) -> Any:
    origin = typing.get_origin(hint)
    if origin is typing.Union:  # Optional[X]
        if value is None:
            return None
        inner = [a for a in typing.get_args(hint) if a is not _NONE_TYPE][0]
        return _coerce(inner, value, key)
    if dataclasses.is_dataclass(hint):
        return _build(hint, value, key + ".")
    if origin in (list, List):
        (item,) = typing.get_args(hint)
        if not isinstance(value, list):
            raise ConfigError(f"{key}: expected a list, got {type(value).__name__}")
        return [_coerce(item, v, f"{key}[{i}]") for i, v in enumerate(value)]
    # bool is an int subclass in Python: reject it where a number is expected, and numbers where a bool is.
    if hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif hint is str:
        if isinstance(value, str):
            return value
    raise ConfigError(f"{key}: expected {getattr(hint, '__name__', hint)}, got {type(value).__name__} {value!r}")


def _check_values(c: TrainConfig) -> None:
    choices = {
        "loss": LOSSES,
        "loss_aggregation": AGGREGATIONS,
        "policy_loss": POLICY_LOSSES,
        "lr_schedule": LR_SCHEDULES,
        "kl_estimator": KL_ESTIMATORS,
        "device": DEVICES,
        "dtype": DTYPES,
        "weights_dtype": ("float32", "bfloat16"),
    }
    for key, allowed in choices.items():
        if getattr(c, key) not in allowed:
            raise ConfigError(f"{key}: expected one of {', '.join(allowed)}, got {getattr(c, key)!r}")
    positive = ["learning_rate", "grad_clip", "micro_batch_tokens", "updates_per_step", "threads", "adam_eps"]
    non_negative = ["clip_low", "clip_high", "kl_coef", "warmup_steps", "total_steps", "weight_decay", "seed"]
    for key in positive:
        if key == "micro_batch_tokens" and c.micro_batch_tokens is None:
            continue
        if not getattr(c, key) > 0:
            raise ConfigError(f"{key}: must be > 0, got {getattr(c, key)!r}")
    for key in non_negative:
        if getattr(c, key) < 0:
            raise ConfigError(f"{key}: must be >= 0, got {getattr(c, key)!r}")
    m = c.mismatch
    if m is not None:
        if m.mode not in MISMATCH_MODES or m.level not in MISMATCH_LEVELS or m.masked_tokens not in MASKED_TOKENS:
            raise ConfigError(
                f"mismatch: mode must be one of {', '.join(MISMATCH_MODES)}, level one of "
                f"{', '.join(MISMATCH_LEVELS)} and masked_tokens one of {', '.join(MASKED_TOKENS)}, "
                f"got {m.mode!r}, {m.level!r}, {m.masked_tokens!r}"
            )
        if not 0 <= m.low < m.high:
            raise ConfigError(f"mismatch: needs 0 <= low < high, got low {m.low!r}, high {m.high!r}")
    if c.dual_clip is not None and not c.dual_clip > 1:
        raise ConfigError(f"dual_clip: must be > 1, got {c.dual_clip!r}")
    if c.loss_norm_constant is not None and c.loss_norm_constant <= 0:
        raise ConfigError(f"loss_norm_constant: must be > 0, got {c.loss_norm_constant!r}")
    if c.lr_schedule == "cosine" and c.total_steps <= c.warmup_steps:
        raise ConfigError(
            f"total_steps: cosine needs total_steps > warmup_steps, got {c.total_steps} <= {c.warmup_steps}"
        )
    if c.lora is not None and (
        c.lora.rank <= 0 or c.lora.alpha <= 0 or not 0 <= c.lora.dropout < 1 or not c.lora.target_modules
    ):
        raise ConfigError("lora: needs rank > 0, alpha > 0, 0 <= dropout < 1 and at least one target module")
