"""Memory and speed knobs of the trainer: the micro-batch size when the recipe leaves it unset, the
torch.compile switch, and out-of-memory errors that name the knob to turn down.

Unset, micro_batch_tokens is sized from free memory: the GPU's on CUDA; on CPU the machine's available
memory (fp32 activations), but never past CPU_ACTIVATION_BYTES of activations, and CPU_MICRO_BATCH_TOKENS
where the available memory cannot be read.
"""
from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterator, Optional

import torch

CPU_MICRO_BATCH_TOKENS = 8192  # what a CPU run uses when micro_batch_tokens is unset and free memory unknown
MIN_AUTO_TOKENS, MAX_AUTO_TOKENS = 1024, 65536
FREE_MEMORY_SHARE = 0.6  # of the free memory after weights and optimizer state; the rest absorbs fragmentation
# On CPU a micro-batch of a few hundred positions already keeps the matmuls busy; more only costs memory. Sized
# from free RAM alone, SmolLM2-135M's LoRA steps took 6k-token micro-batches and the trainer to 8.6-12.9 GB
# (and into the kernel's OOM killer on a shared 24 GB machine). The estimate leaves out the attention scores
# and the lm_head's logits, which at 1k positions took SmolLM2's trainer to 4.2 GB: half a GiB of estimate
# (~256 positions of it, one sequence of a calculator episode) keeps it under 3 GB.
CPU_ACTIVATION_BYTES = 1 << 29
CPU_MIN_TOKENS = 256


class TrainerOutOfMemory(RuntimeError):
    """A train step ran out of device memory; the message names the knobs that lower it."""


def auto_micro_batch_tokens(
    free_bytes: int, config: Dict[str, Any], gradient_checkpointing: bool, compute_bytes: int = 2
) -> int:
    """Tokens per micro-batch that fit `free_bytes` (device memory free once the model, its gradients
    and optimizer state are allocated) for a model with this config.json: the activations a position
    keeps for backward, per layer, times the layers (one layer with gradient checkpointing, plus the
    layer inputs), plus the chunked lm_head (model/token_stats.py) whose logits are bounded by chunk.
    Rounded down to a multiple of 1024 and kept in [MIN_AUTO_TOKENS, MAX_AUTO_TOKENS]."""
    return _tokens_within(FREE_MEMORY_SHARE * max(free_bytes, 0), config, gradient_checkpointing, compute_bytes)


def cpu_activation_tokens(config: Dict[str, Any], gradient_checkpointing: bool) -> int:
    """The most tokens per micro-batch whose fp32 activations fit CPU_ACTIVATION_BYTES (the estimate of
    auto_micro_batch_tokens), in steps of CPU_MIN_TOKENS (a longer sequence still goes alone)."""
    tokens = int(CPU_ACTIVATION_BYTES // _activation_bytes(config, gradient_checkpointing, compute_bytes=4))
    return max(CPU_MIN_TOKENS, min(MAX_AUTO_TOKENS, tokens // CPU_MIN_TOKENS * CPU_MIN_TOKENS))


def _tokens_within(
    budget_bytes: float, config: Dict[str, Any], gradient_checkpointing: bool, compute_bytes: int
) -> int:
    tokens = int(budget_bytes // _activation_bytes(config, gradient_checkpointing, compute_bytes))
    return max(MIN_AUTO_TOKENS, min(MAX_AUTO_TOKENS, tokens // 1024 * 1024))


def _activation_bytes(config: Dict[str, Any], gradient_checkpointing: bool, compute_bytes: int) -> int:
    """Bytes one position keeps for backward (see auto_micro_batch_tokens)."""
    hidden = int(config["hidden_size"])
    inter = int(config.get("intermediate_size", 4 * hidden))
    layers = int(config["num_hidden_layers"])
    heads = int(config["num_attention_heads"])
    kv_heads = int(config.get("num_key_value_heads", heads))
    head_dim = hidden // heads
    # Saved per position per layer: norms' inputs (2 x C, fp32), q/k/v/attention output, the MLP's
    # gate/up/act/product (4 x I) and the residual stream, in the compute dtype.
    per_layer = compute_bytes * (6 * hidden + 2 * kv_heads * head_dim + 4 * inter) + 4 * 2 * hidden
    if gradient_checkpointing:
        return max(1, per_layer + layers * compute_bytes * hidden)  # one layer live, each layer's input kept
    return max(1, layers * per_layer)


def resolve_micro_batch_tokens(
    requested: Optional[int],
    device: torch.device,
    config: Dict[str, Any],
    gradient_checkpointing: bool,
    reserved_bytes: int = 0,
) -> int:
    """`requested`, or when None: sized from free memory (less `reserved_bytes`: what the first step will
    still allocate, gradients and optimizer state), the GPU's on CUDA and the machine's on CPU, where
    training runs in fp32, there at most CPU_ACTIVATION_BYTES of activations; CPU_MICRO_BATCH_TOKENS when
    the machine's is unknown. On CPU, larger micro-batches are faster for small models (a 0.9M-parameter
    step: 8192 -> 16384 tokens, -12%, both well within the bound), and a fixed 8192 would not fit a 0.5B
    model's activations (~2.6 MB a position) in 16 GB."""
    if requested is not None:
        return requested
    if device.type != "cuda":
        available = cpu_available_bytes()
        if available is None:
            return CPU_MICRO_BATCH_TOKENS
        by_memory = auto_micro_batch_tokens(available - reserved_bytes, config, gradient_checkpointing, compute_bytes=4)
        return min(by_memory, cpu_activation_tokens(config, gradient_checkpointing))
    free, _total = torch.cuda.mem_get_info(device)
    return auto_micro_batch_tokens(free - reserved_bytes, config, gradient_checkpointing)


def cpu_available_bytes() -> Optional[int]:
    """Memory the machine can give without swapping (Linux's MemAvailable), or None where unknown."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def compile_layers(module: torch.nn.Module) -> None:
    """torch.compile each decoder layer in place (nn.Module.compile keeps parameter names and the
    module's type, which checkpoints, LoRA and the engine's decoder rely on)."""
    from .grad_checkpoint import decoder_layers

    if not hasattr(torch.nn.Module, "compile"):
        raise ValueError(f"compile: needs torch >= 2.2 (nn.Module.compile); this is torch {torch.__version__}")
    layers = decoder_layers(module)
    if layers is None:
        raise ValueError("compile: the model has no `layers` ModuleList to compile")
    for layer in layers:
        layer.compile()


@contextlib.contextmanager
def out_of_memory_names_the_knobs(micro_batch_tokens: int, shape: Any = None) -> Iterator[None]:
    """Turn a CUDA out-of-memory error inside the block into TrainerOutOfMemory naming what to lower,
    after releasing the cached blocks the failed step left."""
    try:
        yield
    except Exception as e:  # noqa: BLE001 - only out-of-memory errors are translated; the rest re-raised as is
        if isinstance(e, TrainerOutOfMemory) or not is_out_of_memory(e):
            raise
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        where = "" if shape is None else f" at a micro-batch of {shape[0]} x {shape[1]} tokens"
        raise TrainerOutOfMemory(
            f"out of GPU memory in train_step{where}: lower algorithm.micro_batch_tokens (now {micro_batch_tokens}), "
            "or set model.trainer.gradient_checkpointing: true, or train a LoRA adapter (algorithm.lora)"
        ) from None


def is_out_of_memory(error: BaseException) -> bool:
    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom is not None and isinstance(error, oom):
        return True
    return isinstance(error, RuntimeError) and "out of memory" in str(error)
