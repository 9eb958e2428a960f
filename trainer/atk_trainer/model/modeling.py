"""The policy façade: one object the Trainer and the embedded engine share.

    policy = load_policy("models/tiny-arith", backend="auto", device="cpu", dtype="float32")
    policy.logits(input_ids)          # (B, T) -> (B, T, V), right-padded batches, causal
    policy.save_pretrained(out_dir)   # config.json + model.safetensors (HF layout)

backend "transformers" is AutoModelForCausalLM; "builtin" is atk_trainer.model.decoder (model_type qwen2, qwen3,
llama or mistral; no dependencies); "auto" picks transformers when it is importable. Both read and write
the same directory layout and parameter names. The Trainer updates `policy.module` in place (or replaces
it with a PeftModel), so code that samples must read `policy.module` on every use.
"""
from __future__ import annotations

import importlib.util
import json
import os
from typing import Any, Dict, Iterator, Optional, Tuple

import torch

from . import decoder
from .safetensors_io import load_dir, save_file
from .token_stats import token_stats

INITS = ("pretrained", "random")  # what load_policy starts from: the checkpoint's weights, or a seeded random init

BACKENDS = ("auto", "builtin", "transformers")
DEVICES = ("auto", "cpu", "cuda")
DTYPES = {"auto": None, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class Policy:
    """A causal LM and what is needed to run and save it."""

    def __init__(self, module: torch.nn.Module, config: Dict[str, Any], backend: str, path: Optional[str] = None):
        self.module = module  # nn.Module; replaced by a PeftModel when the trainer adds peft LoRA
        self.config = config  # config.json as a dict
        self.backend = backend  # "builtin" | "transformers"
        self.path = path  # the directory it was loaded from (None for random_policy)

    @property
    def device(self) -> torch.device:
        return next(self.module.parameters()).device

    def logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        """(B, T) token ids -> (B, T, V) next-token logits; causal, so right padding needs no mask."""
        if self.backend == "transformers":
            return self.module(input_ids=input_ids, use_cache=False).logits
        return self.module(input_ids)

    def token_stats(
        self,
        input_ids: torch.Tensor,  # (B, T)
        # (B, T) sequence index of each token in packed rows; None = one per row
        segments: Optional[torch.Tensor] = None,
        chunk: Optional[int] = None,  # positions per logits chunk (token_stats.CHUNK_LOGITS_BYTES by default)
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(logp, entropy, top1), each (B, T) (float32, float32, bool), computed from the hidden states and the
        lm_head in chunks of positions (model/token_stats.py), never as full (B, T, V) logits. Packed rows
        (`segments`) restart positions at each sequence and attend within it only (built-in backend)."""
        positions = starts = mask = None
        if segments is not None:
            if self.backend != "builtin":
                raise ValueError(
                    "pack_sequences: packed rows need backend builtin (transformers takes no block mask here)"
                )
            positions, starts = segment_positions(segments)
            mask = decoder.block_causal_mask(segments)

        def head(hidden: torch.Tensor, lm_head: torch.nn.Module) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            return token_stats(hidden, lm_head, input_ids, starts, chunk)  # (logp, entropy, top1)

        if self.backend == "transformers":
            # The decoder without its lm_head, then the same chunked head: peft's LoRA layers live inside it.
            hidden = self.module.get_decoder()(input_ids=input_ids, use_cache=False).last_hidden_state  # (B, T, C)
            return head(hidden, self.module.get_output_embeddings())
        return self.module(input_ids, positions, attn_mask=mask, head=head)

    def save_pretrained(self, out_dir: str, dtype: Optional[torch.dtype] = None) -> None:
        """config.json and model.safetensors in Hugging Face layout, written by atk_trainer.model.safetensors_io
        in both backends (tokenizer files are the caller's). A tied lm_head is left out, as transformers does.
        `dtype` casts the floating-point weights (an engine serving bf16 needs no more)."""
        os.makedirs(out_dir, exist_ok=True)
        state = dict(self.serving_weights(dtype))
        config = dict(self.config)
        config["torch_dtype"] = str(next(iter(state.values())).dtype).replace("torch.", "")
        with open(os.path.join(out_dir, "config.json"), "w") as f:
            json.dump(config, f, indent=2)
        save_file(state, os.path.join(out_dir, "model.safetensors"), {"format": "pt"})

    def serving_weights(self, dtype: Optional[torch.dtype] = None) -> Iterator[Tuple[str, torch.Tensor]]:
        """(HF name, tensor) for every weight an engine loads, cast one at a time to `dtype` (floating point
        only): what save_pretrained writes and a weight broadcast sends. A tied lm_head is left out."""
        tied = self.config.get("tie_word_embeddings", False)
        for name, tensor in self.module.state_dict().items():
            if tied and name == "lm_head.weight":
                continue
            yield name, tensor.to(dtype) if dtype is not None and tensor.is_floating_point() else tensor


def load_policy(
    path: str,
    *,
    backend: str = "auto",
    device: str = "cpu",
    dtype: str = "float32",
    init: str = "pretrained",
    seed: int = 0,
) -> Policy:
    """The model in a Hugging Face directory (config.json + safetensors weights), or with init
    "random" the architecture of its config.json with random weights (random_policy, `seed`).

    device "auto" is cuda when available; dtype "auto" is float32 (on CUDA the trainer adds bf16
    autocast, keeping float32 master weights).
    @raises ValueError for an unknown backend/device/dtype/init or a config the built-in model lacks;
    FileNotFoundError without config.json or weights; ImportError for backend "transformers" without it.
    """
    if init not in INITS:
        raise ValueError(f"init: expected pretrained or random, got {init!r}")
    if init == "random":
        policy = random_policy(read_config(path), seed=seed, backend=backend, device=device, dtype=dtype)
        policy.path = os.path.abspath(path)
        return policy
    backend, torch_device, torch_dtype = _resolve(backend, device, dtype)
    config = read_config(path)
    if backend == "transformers":
        from transformers import AutoModelForCausalLM  # type: ignore

        module = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch_dtype)
        return Policy(module.to(torch_device).eval(), config, backend, os.path.abspath(path))
    module = decoder.DecoderForCausalLM(decoder.DecoderConfig.from_dict(config))
    load_weights(module, load_dir(path), path)
    return Policy(module.to(device=torch_device, dtype=torch_dtype).eval(), config, backend, os.path.abspath(path))


def random_policy(
    config: Dict[str, Any], *, seed: int = 0, backend: str = "builtin", device: str = "cpu", dtype: str = "float32"
) -> Policy:
    """A randomly initialised model for a config.json dict (N(0, initializer_range) weights, as
    transformers initialises qwen2), seeded so every backend and machine gets the same weights."""
    backend, torch_device, torch_dtype = _resolve(backend, device, dtype)
    config = dict(config)
    module = decoder.DecoderForCausalLM(decoder.DecoderConfig.from_dict(config))
    init_weights(module, float(config.get("initializer_range", 0.02)), seed)
    if backend == "transformers":
        from transformers import AutoConfig, AutoModelForCausalLM  # type: ignore

        hf_config = AutoConfig.for_model(**config)
        # float32, not the config's torch_dtype (bf16 for Qwen), which would round the seeded weights.
        hf = AutoModelForCausalLM.from_config(hf_config, torch_dtype=torch.float32)
        load_weights(hf, module.state_dict(), "random_policy")
        module = hf
    return Policy(module.to(device=torch_device, dtype=torch_dtype).eval(), config, backend)


def segment_positions(segments: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """(B, T) sequence index of each token of packed rows -> (positions (B, T) restarting at 0 in each
    sequence, starts (B, T) bool where a sequence begins)."""
    T = segments.shape[1]
    index = torch.arange(T, device=segments.device).expand_as(segments)  # (B, T)
    starts = torch.ones_like(segments, dtype=torch.bool)
    starts[:, 1:] = segments[:, 1:] != segments[:, :-1]
    first = torch.where(starts, index, torch.zeros_like(index)).cummax(dim=1).values  # (B, T) where each sequence began
    return index - first, starts


def read_config(path: str) -> Dict[str, Any]:
    config_path = os.path.join(path, "config.json")
    if not os.path.exists(config_path):
        raise FileNotFoundError(f"{config_path}: no such file (a model directory needs config.json)")
    with open(config_path) as f:
        return json.load(f)


def init_weights(module: torch.nn.Module, std: float, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            elif name.endswith(".bias"):
                p.zero_()
            else:
                p.copy_(torch.randn(p.shape, generator=generator) * std)
        pad = module.model.embed_tokens.padding_idx
        if pad is not None:  # transformers zeroes the padding token's embedding row
            module.model.embed_tokens.weight[pad].zero_()


def load_weights(module: torch.nn.Module, tensors: Dict[str, torch.Tensor], source: str) -> None:
    """Copy HF-named tensors into `module`; every parameter must be given except a tied lm_head."""
    own = module.state_dict()
    tied = bool(getattr(getattr(module, "config", None), "tie_word_embeddings", False))
    missing = [k for k in own if k not in tensors and not (tied and k == "lm_head.weight")]
    unexpected = [k for k in tensors if k not in own]
    if missing or unexpected:
        raise ValueError(f"{source}: weights do not fit the model (missing {missing[:3]}, unexpected {unexpected[:3]})")
    with torch.no_grad():
        for name, tensor in tensors.items():
            if own[name].shape != tensor.shape:
                raise ValueError(
                    f"{source}: {name} has shape {list(tensor.shape)}, the model expects {list(own[name].shape)}"
                )
            own[name].copy_(tensor)


def transformers_available() -> bool:
    return importlib.util.find_spec("transformers") is not None


def _resolve(backend: str, device: str, dtype: str):
    if backend not in BACKENDS:
        raise ValueError(f"backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")
    if device not in DEVICES and not str(device).startswith("cuda:"):
        raise ValueError(f"device: expected one of {', '.join(DEVICES)} (or cuda:N), got {device!r}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype: expected one of {', '.join(DTYPES)}, got {dtype!r}")
    if backend == "auto":
        backend = "transformers" if transformers_available() else "builtin"
    elif backend == "transformers" and not transformers_available():
        raise ImportError(
            "backend 'transformers' needs the transformers package (pip install transformers), or use backend 'builtin'"
        )
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    elif device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r}: torch {torch.__version__} sees no CUDA device")
    return backend, torch.device(device), DTYPES[dtype] or torch.float32
