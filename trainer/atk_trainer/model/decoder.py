"""The built-in decoder-only transformer (DecoderForCausalLM) for machines without `transformers`: one
module for the four architectures that differ only by flags (ARCHITECTURES): qwen2 (qkv bias), qwen3
(per-head q/k RMSNorm, no qkv bias), llama (optional attention and MLP biases, Llama 3 rope scaling) and
mistral (no biases, every layer sliding).

Same config.json keys and the same parameter names as transformers
(`model.embed_tokens.weight`, `model.layers.N.self_attn.q_proj.weight`, ..., `lm_head.weight`), so
one checkpoint loads here, in transformers and in vLLM. Every projection is an `nn.Linear` (`Linear`, whose
single-row product is a matrix-vector product; LoRA wraps them by name). Written for torch >= 1.13:
scaled_dot_product_attention when torch has it, an explicit softmax otherwise.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from .attention_cache import AttentionCache, LayerCache


HAS_SDPA = hasattr(F, "scaled_dot_product_attention")
BROADCAST_ATTENTION_ELEMENTS = 1 << 24  # the broadcast path's (B, H, T, S, D) temporary: 64 MiB in fp32
BROADCAST_ENTRY_ELEMENTS = 4096  # its work per (row, kv head): past it a matmul per entry is faster


@dataclass(frozen=True)
class RopeScaling:
    """config.json's rope_scaling, as vLLM applies it (the engine whose logprobs the trainer must match).

    linear: every position divided by `factor`. dynamic (NTK): the base raised once for a context of
    `factor` x max_position_embeddings, at every length, as vLLM does; transformers raises it only past
    max_position_embeddings, so its short-sequence logits differ. yarn: frequencies whose wavelength
    fits `beta_fast` rotations into the original context kept, those under `beta_slow` rotations
    divided by `factor`, a ramp between, and cos/sin scaled by the attention factor. llama3 (Llama 3.1+):
    wavelengths longer than original context / low_freq_factor divided by `factor`, those shorter than
    original context / high_freq_factor kept, a ramp in context / wavelength between."""

    type: str = "default"  # default | linear | dynamic | yarn | llama3
    factor: float = 1.0
    original_max_position: int = 0  # yarn: the context the model was trained with
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    attention_factor: Optional[float] = None  # yarn, transformers' key: replaces 0.1 ln(factor) + 1
    attn_factor: float = 1.0  # yarn, vLLM's key: multiplies it
    truncate: bool = True  # yarn: round the correction range outwards to whole dimensions
    low_freq_factor: float = 1.0  # llama3: wavelengths over original context / this are scaled
    high_freq_factor: float = 4.0  # llama3: wavelengths under original context / this are kept

    KEYS = {
        "default": set(),
        "linear": {"factor"},
        # transformers accepts original_max_position_embeddings; neither engine reads it
        "dynamic": {"factor", "original_max_position_embeddings"},
        "yarn": {
            "factor",
            "original_max_position_embeddings",
            "beta_fast",
            "beta_slow",
            "attention_factor",
            "attn_factor",
            "truncate",
        },
        "llama3": {"factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"},
    }

    @staticmethod
    def from_config(config: Mapping[str, Any]) -> "RopeScaling":
        scaling = dict(config.get("rope_scaling") or {})
        rope_type = scaling.pop("rope_type", scaling.pop("type", "default"))
        if rope_type not in RopeScaling.KEYS:
            raise ValueError(
                f"config.json: rope_scaling type {rope_type!r} is not a built-in rope type ("
                f"{', '.join(RopeScaling.KEYS)}); load it with model.trainer.backend: transformers"
            )
        unknown = sorted(set(scaling) - RopeScaling.KEYS[rope_type])
        if unknown:
            takes = ", ".join(sorted(RopeScaling.KEYS[rope_type])) or "no keys"
            raise ValueError(
                f"config.json: rope_scaling key {unknown[0]!r} does not apply to rope type {rope_type!r} "
                f"(it takes {takes})"
            )
        if rope_type == "default":
            return RopeScaling()
        if not isinstance(scaling.get("factor"), (int, float)) or scaling["factor"] < 1:
            raise ValueError(f"config.json: rope_scaling factor must be a number >= 1, got {scaling.get('factor')!r}")
        max_position = int(config.get("max_position_embeddings", 32768))
        if rope_type == "llama3":
            absent = [k for k in sorted(RopeScaling.KEYS["llama3"]) if not isinstance(scaling.get(k), (int, float))]
            if absent:
                raise ValueError(f"config.json: rope_scaling type 'llama3' needs a number for {absent[0]!r}")
            if scaling["high_freq_factor"] <= scaling["low_freq_factor"]:
                raise ValueError("config.json: rope_scaling high_freq_factor must be greater than low_freq_factor")
        return RopeScaling(
            type=rope_type,
            factor=float(scaling["factor"]),
            original_max_position=int(scaling.get("original_max_position_embeddings") or max_position),
            beta_fast=float(scaling.get("beta_fast") or 32),
            beta_slow=float(scaling.get("beta_slow") or 1),
            attention_factor=None if scaling.get("attention_factor") is None else float(scaling["attention_factor"]),
            attn_factor=float(scaling.get("attn_factor", 1.0)),
            truncate=bool(scaling.get("truncate", True)),
            low_freq_factor=float(scaling.get("low_freq_factor", 1.0)),
            high_freq_factor=float(scaling.get("high_freq_factor", 4.0)),
        )

    def frequencies(self, head_dim: int, theta: float) -> "tuple[torch.Tensor, float]":
        """(inv_freq (D/2,), the factor cos and sin are multiplied by)."""
        exponents = torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim  # (D/2,)
        if self.type == "dynamic":
            theta = theta * (self.factor * self.factor - self.factor + 1) ** (head_dim / (head_dim - 2))
        inv_freq = 1.0 / theta**exponents  # (D/2,)
        if self.type == "linear":
            return inv_freq / self.factor, 1.0
        if self.type == "llama3":
            return self._llama3(inv_freq), 1.0
        if self.type != "yarn":
            return inv_freq, 1.0
        low, high = self._yarn_correction_range(head_dim, theta)
        # 0: keep, 1: scale
        ramp = ((torch.arange(head_dim // 2, dtype=torch.float32) - low) / max(high - low, 0.001)).clamp(0, 1)
        inv_freq = inv_freq / self.factor * ramp + inv_freq * (1 - ramp)
        scale = self.attention_factor if self.attention_factor is not None else 0.1 * math.log(self.factor) + 1.0
        return inv_freq, scale * self.attn_factor

    def _llama3(self, inv_freq: torch.Tensor) -> torch.Tensor:
        context = self.original_max_position
        wavelength = 2 * math.pi / inv_freq  # (D/2,)
        # 0 at wavelength context / low_freq_factor (scaled), 1 at context / high_freq_factor (kept)
        ramp = (context / wavelength - self.low_freq_factor) / (self.high_freq_factor - self.low_freq_factor)
        smoothed = (1 - ramp) * inv_freq / self.factor + ramp * inv_freq
        out = torch.where(wavelength > context / self.low_freq_factor, inv_freq / self.factor, inv_freq)
        medium = (wavelength >= context / self.high_freq_factor) & (wavelength <= context / self.low_freq_factor)
        return torch.where(medium, smoothed, out)

    def _yarn_correction_range(self, head_dim: int, theta: float) -> "tuple[float, float]":
        def dim_with(rotations: float) -> float:
            # the dimension whose wavelength turns `rotations` times in the original context
            return head_dim * math.log(self.original_max_position / (rotations * 2 * math.pi)) / (2 * math.log(theta))

        low, high = dim_with(self.beta_fast), dim_with(self.beta_slow)
        if self.truncate:
            low, high = math.floor(low), math.ceil(high)
        return max(low, 0), min(high, head_dim - 1)


@dataclass(frozen=True)
class Architecture:
    """What a built-in model_type changes in the qwen2 decoder, as transformers builds it."""

    qkv_bias: Optional[bool]  # q/k/v projections biased; None: config.json's attention_bias, o_proj too
    qk_norm: bool = False  # an RMSNorm over each head of q and k before rope
    mlp_bias: bool = False  # the MLP's projections follow config.json's mlp_bias
    default_head_dim: Optional[int] = None  # without config.json's head_dim; None: hidden_size / heads
    # which layers slide: "qwen2" (use_sliding_window, then layer_types or max_window_layers),
    # "all" (every layer, whenever sliding_window is set), "none"
    sliding: str = "qwen2"


ARCHITECTURES = {
    "qwen2": Architecture(qkv_bias=True),
    "qwen3": Architecture(qkv_bias=None, qk_norm=True, default_head_dim=128),
    "llama": Architecture(qkv_bias=None, mlp_bias=True, sliding="none"),
    "mistral": Architecture(qkv_bias=False, sliding="all"),
}


@dataclass
class DecoderConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    tie_word_embeddings: bool
    rope_scaling: RopeScaling = RopeScaling()
    # transformers' embedding padding_idx: row zeroed at init, no gradient from lookups
    pad_token_id: Optional[int] = None
    sliding_window: Optional[int] = None  # tokens a sliding layer attends to, itself included; None: no layer slides
    sliding_layers: Tuple[bool, ...] = ()  # per layer: attends to the last sliding_window tokens only
    qkv_bias: bool = True  # q_proj, k_proj and v_proj have biases
    o_bias: bool = False  # o_proj has a bias
    mlp_bias: bool = False  # gate_proj, up_proj and down_proj have biases
    qk_norm: bool = False  # q_norm and k_norm: RMSNorm over each head of q and k, before rope

    @staticmethod
    def from_dict(config: Mapping[str, Any]) -> "DecoderConfig":
        """The fields this implementation uses; refuses configs of other architectures."""
        model_type = config.get("model_type", "qwen2")
        if model_type not in ARCHITECTURES:
            raise ValueError(
                f"config.json: model_type {model_type!r} is not built in ({', '.join(ARCHITECTURES)}); "
                "it runs on the transformers backend (pip install transformers; model.trainer.backend: transformers)"
            )
        arch = ARCHITECTURES[model_type]
        if config.get("hidden_act", "silu") != "silu":
            raise ValueError(f"config.json: hidden_act {config['hidden_act']!r}; {model_type} uses silu")
        heads = int(config["num_attention_heads"])
        kv_heads = int(config.get("num_key_value_heads") or heads)
        if heads % kv_heads:
            raise ValueError(
                f"config.json: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}"
            )
        hidden = int(config["hidden_size"])
        layers = int(config["num_hidden_layers"])
        window, sliding = _sliding_window(config, layers, arch.sliding)
        attention_bias = bool(config.get("attention_bias", False)) if arch.qkv_bias is None else arch.qkv_bias
        return DecoderConfig(
            vocab_size=int(config["vocab_size"]),
            hidden_size=hidden,
            intermediate_size=int(config["intermediate_size"]),
            num_hidden_layers=layers,
            num_attention_heads=heads,
            num_key_value_heads=kv_heads,
            head_dim=int(config.get("head_dim") or arch.default_head_dim or hidden // heads),
            rms_norm_eps=float(config.get("rms_norm_eps", 1e-6)),
            rope_theta=float(config.get("rope_theta", 10000.0)),
            tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
            rope_scaling=RopeScaling.from_config(config),
            pad_token_id=_pad_token_id(config),
            sliding_window=window,
            sliding_layers=sliding,
            qkv_bias=attention_bias,
            o_bias=attention_bias and arch.qkv_bias is None,
            mlp_bias=arch.mlp_bias and bool(config.get("mlp_bias", False)),
            qk_norm=arch.qk_norm,
        )


def _sliding_window(config: Mapping[str, Any], layers: int, rule: str) -> "tuple[Optional[int], Tuple[bool, ...]]":
    """Which layers slide, as transformers and vLLM decide it. qwen2/qwen3: `layer_types` when config.json
    lists them, else layers from `max_window_layers` on (default 28), and none without use_sliding_window;
    mistral: every layer whenever sliding_window is set; llama: none."""
    window = config.get("sliding_window")
    if rule == "none" or window is None or (rule == "qwen2" and not config.get("use_sliding_window")):
        return None, (False,) * layers
    if not isinstance(window, int) or window < 1:
        raise ValueError(f"config.json: sliding_window must be a positive integer, got {window!r}")
    if rule == "all":
        return window, (True,) * layers
    types = config.get("layer_types")
    if types is not None:
        if len(types) != layers or set(types) - {"sliding_attention", "full_attention"}:
            raise ValueError(f"config.json: layer_types must list {layers} of sliding_attention/full_attention")
        sliding = tuple(t == "sliding_attention" for t in types)
    else:
        first = int(config.get("max_window_layers", 28))
        sliding = tuple(i >= first for i in range(layers))
    return (window if any(sliding) else None), sliding


def _pad_token_id(config: Mapping[str, Any]) -> Optional[int]:
    pad = config.get("pad_token_id")
    return pad if isinstance(pad, int) and 0 <= pad < int(config["vocab_size"]) else None


FEW_ROWS = 16  # rows a linear without gradient computes as weight @ x^T (see linear)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    """F.linear, except without gradient for a decode step's few rows (..., in) -> (..., out). torch hands a linear
    to BLAS as x @ weight^T, and Debian's OpenBLAS packs the weight before reading it: one row took 520 us of
    SmolLM2's 576 -> 1536 projection that way and 160 us as a matrix-vector product, its 49,152-row lm_head 50
    against 23 ms; 2 to 16 rows, 420-520 us against 320-390 us as weight @ x^T, the same numbers (one thread).
    A decode step is these products and little else."""
    rows = x.numel() // x.shape[-1]
    if rows > FEW_ROWS or torch.is_grad_enabled():
        return F.linear(x, weight, bias)
    if rows == 1:
        y = torch.mv(weight, x.reshape(-1))  # (out,)
    else:
        y = torch.mm(weight, x.reshape(rows, -1).t()).t().contiguous()  # (rows, out)
    if bias is not None:
        y = y + bias
    return y.view(*x.shape[:-1], weight.shape[0])


class Linear(nn.Linear):
    """nn.Linear (same parameters and state dict) computed by `linear`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)


class DecoderForCausalLM(nn.Module):
    """logits = lm_head(norm(layers(embed(ids)))). forward() is the plain causal pass; `cache` and
    `new_valid` are for generation (see AttentionCache), `attn_mask` for packed rows (block_causal_mask), and
    `head` replaces the lm_head call: head(hidden (B, T, C), lm_head) is returned instead of the logits,
    so the trainer computes logprobs chunk by chunk inside forward (where FSDP has the weights gathered)."""

    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.config = config
        self.model = DecoderModel(config)
        self.lm_head = Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(
        self,
        input_ids: torch.Tensor,  # (B, T)
        positions: Optional[torch.Tensor] = None,  # (B, T); default 0..T-1
        cache: Optional[AttentionCache] = None,
        new_valid: Optional[torch.Tensor] = None,  # (B, T) bool: which new tokens are real (cache only)
        attn_mask: Optional[torch.Tensor] = None,  # (B, 1, T, T) bool, True = may attend; None = causal
        head: Optional[Callable[[torch.Tensor, nn.Module], Any]] = None,
    ) -> Any:  # (B, T, V) logits, or what `head` returns
        hidden = self.model(input_ids, positions, cache, new_valid, attn_mask)  # (B, T, C)
        return self.lm_head(hidden) if head is None else head(hidden, self.lm_head)


class DecoderModel(nn.Module):
    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.rotary = RotaryEmbedding(config.head_dim, config.rope_theta, config.rope_scaling)
        self.config = config

    def forward(
        self, input_ids, positions=None, cache: Optional[AttentionCache] = None, new_valid=None, attn_mask=None
    ):
        # (B, T) -> (B, T, C)
        B, T = input_ids.shape
        if positions is None:
            positions = torch.arange(T, device=input_ids.device).expand(B, T)
        x = self.embed_tokens(input_ids)  # (B, T, C)
        cos, sin = self.rotary(positions, x.dtype)  # (B, 1, T, D) each
        mask = attn_mask if cache is None else cache.begin(input_ids, new_valid)  # (B, 1, T, S) bool
        window = self.config.sliding_window
        window_mask = None if window is None else sliding_window_mask(T, window, mask, cache, input_ids.device)
        if window is not None and attn_mask is not None and cache is None:  # a packed row: the band within each block
            window_mask = attn_mask if window_mask is None else window_mask & attn_mask
        for i, layer in enumerate(self.layers):
            layer_mask = window_mask if window is not None and self.config.sliding_layers[i] else mask
            x = layer(x, cos, sin, layer_mask, None if cache is None else cache.layer(i))
        return self.norm(x)


def block_causal_mask(segments: torch.Tensor) -> torch.Tensor:
    """(B, T) sequence index of each token of packed rows -> (B, 1, T, T) bool: a token attends to the
    tokens before it (itself included) of its own sequence only."""
    T = segments.shape[1]
    same = segments.unsqueeze(2) == segments.unsqueeze(1)  # (B, T, T)
    causal = torch.ones(T, T, dtype=torch.bool, device=segments.device).tril()
    return (same & causal).unsqueeze(1)


def sliding_window_mask(T: int, window: int, mask, cache, device):
    """The mask of a layer that attends to the last `window` tokens, itself included: (T, T) bool for
    a plain causal pass (None while T <= window: causal is the same), (B, 1, T, S) with a KV cache."""
    if cache is not None:
        return mask & cache.recent(window)
    if T <= window:
        return None
    causal = torch.ones(T, T, dtype=torch.bool, device=device).tril()
    return causal & ~causal.tril(-window)  # (T, T): key k where q - window < k <= q


class DecoderLayer(nn.Module):
    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.self_attn = DecoderAttention(config)
        self.mlp = DecoderMLP(config)
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(self, x, cos, sin, mask=None, layer_cache: Optional[LayerCache] = None):  # (B, T, C) -> (B, T, C)
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, layer_cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class DecoderAttention(nn.Module):
    """Grouped-query attention with rotary positions; biases and the per-head q/k norm as the config says
    (qwen2: q/k/v biased, o not; qwen3: q/k normed per head before rope)."""

    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = (
            config.num_attention_heads,
            config.num_key_value_heads,
            config.head_dim,
        )
        C = config.hidden_size
        self.q_proj = Linear(C, self.heads * self.head_dim, bias=config.qkv_bias)
        self.k_proj = Linear(C, self.kv_heads * self.head_dim, bias=config.qkv_bias)
        self.v_proj = Linear(C, self.kv_heads * self.head_dim, bias=config.qkv_bias)
        self.o_proj = Linear(self.heads * self.head_dim, C, bias=config.o_bias)
        self.qk_norm = config.qk_norm
        if config.qk_norm:
            self.q_norm = RMSNorm(self.head_dim, config.rms_norm_eps)
            self.k_norm = RMSNorm(self.head_dim, config.rms_norm_eps)

    def forward(self, x, cos, sin, mask=None, layer_cache: Optional[LayerCache] = None):  # (B, T, C) -> (B, T, C)
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.heads, self.head_dim)  # (B, T, H, D)
        k = self.k_proj(x).view(B, T, self.kv_heads, self.head_dim)  # (B, T, Hkv, D)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = q.transpose(1, 2), k.transpose(1, 2)  # (B, H, T, D), (B, Hkv, T, D)
        v = self.v_proj(x).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)  # (B, Hkv, T, D)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        if layer_cache is not None:
            k, v = layer_cache.append(k, v)  # (B, Hkv, S, D): the past and these T tokens
        y = attention(q, k, v, mask)  # (B, H, T, D)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, self.heads * self.head_dim))


def attention(q, k, v, mask=None):
    """softmax(q k^T / sqrt(D) + mask) v with kv heads shared by groups of query heads.
    q (B, H, T, D); k, v (B, Hkv, S, D); mask (B, 1, T, S) bool (True = may attend) or None = causal, S == T."""
    B, H, T, D = q.shape
    groups = H // k.shape[1]
    if HAS_SDPA:
        if groups > 1 and T == 1 and mask is not None:
            # A decode step: the G query heads of a kv head become G query rows against the same k and v,
            # so the KV cache is read as it is instead of copied G times per layer per token.
            grouped = q.reshape(B, k.shape[1], groups, D)  # (B, Hkv, G, D)
            y = F.scaled_dot_product_attention(grouped, k, v, attn_mask=mask)  # (B, Hkv, G, D)
            return y.reshape(B, H, 1, D)  # fused kernels return a transposed, non-contiguous layout
        if groups > 1:
            k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)  # (B, H, S, D)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None)
    # Query head h uses kv head h // groups: fold the group into the time axis instead of copying k and v.
    S = k.shape[2]
    qg = q.reshape(B, k.shape[1], groups * T, D)  # (B, Hkv, G*T, D)
    # A decode step multiplies B * Hkv small matrices; torch 1.13's CPU bmm runs one gemm call per
    # batch entry, a broadcast multiply-sum one kernel over a (B, Hkv, G*T, S, D) temporary. The call
    # wins once an entry has work: at batch 128 the tiny model's 32-wide heads take 1.4 ms a layer
    # by broadcast and 2.1 ms by bmm at 40 slots, even at 80 slots; SmolLM2's 3 query heads per
    # 64-wide kv head take 9.4 ms by broadcast and 2.1 ms by bmm at batch 64 and 100 slots, 44 and 4.0 ms
    # at 230 slots (one thread, bench/real.ts's machine).
    broadcast = groups * T * S * D <= BROADCAST_ENTRY_ELEMENTS and B * H * T * S * D <= BROADCAST_ATTENTION_ELEMENTS
    if broadcast:
        scores = (qg.unsqueeze(-2) * k.unsqueeze(2)).sum(-1)  # (B, Hkv, G*T, S)
    else:
        scores = torch.matmul(qg, k.transpose(-1, -2))  # (B, Hkv, G*T, S)
    scores = scores.view(B, H, T, S) / math.sqrt(D)  # (B, H, T, S)
    if mask is None:
        mask = torch.ones(T, S, dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(~mask, float("-inf"))
    probs = torch.softmax(scores.float(), dim=-1).to(q.dtype).view(B, k.shape[1], groups * T, S)
    if broadcast:
        return (probs.unsqueeze(-1) * v.unsqueeze(2)).sum(-2).view(B, H, T, D)
    return torch.matmul(probs, v).view(B, H, T, D)


class DecoderMLP(nn.Module):
    """SwiGLU: down(silu(gate(x)) * up(x))."""

    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.gate_proj = Linear(config.hidden_size, config.intermediate_size, bias=config.mlp_bias)
        self.up_proj = Linear(config.hidden_size, config.intermediate_size, bias=config.mlp_bias)
        self.down_proj = Linear(config.intermediate_size, config.hidden_size, bias=config.mlp_bias)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):  # normalised in float32, as transformers does, then back to x's dtype
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim: int, theta: float, scaling: RopeScaling = RopeScaling()):
        super().__init__()
        inv_freq, self.scale = scaling.frequencies(head_dim, theta)  # (D/2,), YaRN's attention factor
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, positions, dtype):  # (B, T) -> cos, sin (B, 1, T, D)
        freqs = positions.float().unsqueeze(-1) * self.inv_freq.float()  # (B, T, D/2)
        emb = torch.cat((freqs, freqs), dim=-1)  # (B, T, D)
        cos, sin = emb.cos(), emb.sin()
        if self.scale != 1.0:
            cos, sin = cos * self.scale, sin * self.scale
        return cos.to(dtype).unsqueeze(1), sin.to(dtype).unsqueeze(1)


def apply_rotary(x, cos, sin):  # (B, H, T, D): the rotate-half form transformers and vLLM use for qwen2
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin
