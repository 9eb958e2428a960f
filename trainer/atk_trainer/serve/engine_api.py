"""The subset of vLLM's OpenAI-compatible HTTP protocol that atk's engine client uses
(notes/engines.md §1.1): token-ID prompts on /v1/completions with `return_token_ids` and token-ID
logprobs, /health, /v1/models, LoRA adapters loaded at runtime, the prefix-cache reset, and
/collective_rpc for atk's full-weight reload extension (vllm_worker.py).

An adapter is served by its own sampler over a copy of the base weights with the adapter merged in, so
a request naming it samples from base + adapter as vLLM's would. The copy is taken when the adapter is
loaded: unlike vLLM, a later change of the base weights (a train step, a reload) does not reach adapters
already loaded. atk's sync never needs that: it loads a new adapter after every change.

No tokenizer is loaded: prompts must be token IDs, `text` is empty, and logprob keys are always
`token_id:N` (what `return_tokens_as_token_ids` asks for). Requests that would silently change the
sampled distribution in a way this engine does not implement (penalties, min_p, stop strings, ...)
are refused with a 400 rather than ignored.
"""
from __future__ import annotations

import copy
import os
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Union

from ..errors import HttpError, bad_request, expect_object
from ..train import lora as lora_lib
from .engine import Completion, Engine
from .sampling_params import SamplingParams
from ..model.safetensors_io import load_file
from .wire import (
    Body,
    ChoiceLogprobs,
    CompletionChoice,
    CompletionReply,
    Json,
    JsonObject,
    ModelCard,
    ModelList,
    RpcReply,
)

MAX_LOGPROBS = 20  # vLLM's --max-logprobs default
MAX_N = 256
# Fields this engine does not implement, with the value that means "unused".
UNSUPPORTED_UNLESS = {
    "stream": False,
    "echo": False,
    "stop": None,
    "min_tokens": 0,
    "min_p": 0.0,
    "repetition_penalty": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "logit_bias": None,
    "allowed_token_ids": None,
    "bad_words": None,
    "suffix": None,
    "response_format": None,
    "structured_outputs": None,
    "guided_json": None,
    "guided_regex": None,
    "guided_choice": None,
    "guided_grammar": None,
    "truncate_prompt_tokens": None,
}


@dataclass
class ServedAdapter:
    path: str
    engine: Engine  # its own sampler over the base weights with the adapter merged in


class EngineApi:
    """Route handlers over one Engine; `served_name` is the model name requests must use."""

    def __init__(self, engine: Engine, served_name: str = "policy"):
        self.engine = engine
        self.served_name = served_name
        self.root: Optional[str] = None  # model directory, shown in /v1/models
        self.max_model_len = 0
        self.vocab_size = 0
        self.adapters: Dict[str, ServedAdapter] = {}  # lora_name -> its directory and sampler
        self._adapters_lock = threading.Lock()  # request threads look adapters up while others load or unload them
        self._adapter_loads = 0  # seeds each adapter sampler differently
        self.worker: Optional[object] = None  # set by use_worker_extension: what /collective_rpc calls

    def model_loaded(
        self, config: Mapping[str, Json], root: Optional[str], max_model_len: Optional[int] = None
    ) -> None:
        """`max_model_len` overrides the config's max_position_embeddings, as vLLM's --max-model-len does
        (rotary positions extend past it; a recipe may need longer prompts than a tiny model saw)."""
        self.root = root
        self.vocab_size = int(config["vocab_size"])
        self.max_model_len = int(max_model_len or config.get("max_position_embeddings") or 32768)

    # -- routes ----------------------------------------------------------------------------------------
    def health(self, _body: Body) -> None:
        if self.engine.policy is None:
            raise HttpError(503, "no model loaded yet (POST /control/load_model)", "ServiceUnavailableError")
        return None  # 200 with an empty body, as vLLM answers

    def models(self, _body: Body) -> ModelList:
        created = int(time.time())

        def card(name: str, root: Optional[str], parent: Optional[str]) -> ModelCard:
            return {
                "id": name,
                "object": "model",
                "created": created,
                "owned_by": "atk",
                "root": root,
                "parent": parent,
                "max_model_len": self.max_model_len,
                "permission": [],
            }

        data = [card(self.served_name, self.root, None)] if self.engine.policy is not None else []
        data += [card(name, adapter.path, self.served_name) for name, adapter in sorted(self.adapters.items())]
        return {"object": "list", "data": data}

    def completions(self, body: Body) -> CompletionReply:
        if self.engine.policy is None:
            raise HttpError(503, "no model loaded yet (POST /control/load_model)", "ServiceUnavailableError")
        body = expect_object(body)
        model = body.get("model") or self.served_name
        for key, unused in UNSUPPORTED_UNLESS.items():
            if body.get(key, unused) not in (unused, [], {}, ""):
                raise bad_request(f"{key}: not supported by the embedded engine (send {unused!r} or leave it out)")
        prompts = self._prompts(body.get("prompt"))
        params = _sampling_params(body)
        scored = _prompt_logprobs_asked(body)
        for prompt in prompts:
            total = len(prompt) + params.max_tokens
            if total > self.max_model_len:
                raise bad_request(
                    f"This model's maximum context length is {self.max_model_len} tokens. However, you requested "
                    f"{total} tokens ({len(prompt)} in the messages, {params.max_tokens} in the completion). "
                    "Please reduce the length of the messages or completion."
                )
        with self._adapters_lock:  # a sampler being replaced drains what was submitted before the swap
            adapter = self.adapters.get(model)
            if model != self.served_name and adapter is None:
                raise HttpError(404, f"The model `{model}` does not exist.", "NotFoundError")
            engine = self.engine if adapter is None else adapter.engine
            requests = [engine.submit(prompt, params) for prompt in prompts]
        scores = [engine.prompt_logprobs(prompt) for prompt in prompts] if scored else None
        results = [r.wait() for r in requests]
        return self._response(model, body, prompts, results, scores)

    def load_lora_adapter(self, body: Body) -> str:
        body = expect_object(body)
        name, path = _string(body, "lora_name"), _string(body, "lora_path")
        if name in self.adapters and not body.get("load_inplace"):
            raise bad_request(f"The lora adapter '{name}' has already been loaded.")
        if not os.path.isdir(path):
            raise bad_request(f"lora_path {path!r}: no such directory")
        if self.engine.policy is None:
            raise HttpError(503, "no model loaded yet (POST /control/load_model)", "ServiceUnavailableError")
        try:
            config, tensors = lora_lib.read_adapter_dir(path, load_file)
            with self.engine.exclusive():  # no train step or model load changes the base while it is copied
                module = self.engine.policy.module
                if hasattr(module, "peft_config") or any(isinstance(m, lora_lib.LoRALinear) for m in module.modules()):
                    raise ValueError(
                        "the served model carries the trainer's own adapters; runtime adapters need a plain base model"
                    )
                policy = copy.deepcopy(self.engine.policy)
            lora_lib.merge_adapter(policy.module, config, tensors)
        except ValueError as e:
            raise bad_request(f"Loading lora {name} failed: {e}") from None
        with self._adapters_lock:
            if name in self.adapters and not body.get("load_inplace"):  # loaded by a concurrent request meanwhile
                raise bad_request(f"The lora adapter '{name}' has already been loaded.")
            self._adapter_loads += 1
            engine = Engine(max_batch=self.engine.max_batch, seed=self.engine.seed + self._adapter_loads).start()
            engine.set_policy(policy, autocast=self.engine.autocast, decode_step=self.engine.decode_step)
            engine.policy_version = self.engine.policy_version
            replaced = self.adapters.get(name)
            self.adapters[name] = ServedAdapter(path, engine)
        if replaced is not None:  # load_inplace: requests already submitted finish on the old weights
            replaced.engine.close_when_idle()
        return f"Success: LoRA adapter '{name}' added successfully."

    def unload_lora_adapter(self, body: Body) -> str:
        name = _string(expect_object(body), "lora_name")
        with self._adapters_lock:
            adapter = self.adapters.pop(name, None)
        if adapter is None:
            raise HttpError(404, f"The lora adapter '{name}' cannot be found.", "NotFoundError")
        adapter.engine.close_when_idle()  # requests already submitted to it still finish
        return f"Success: LoRA adapter '{name}' removed successfully."

    def reset_prefix_cache(self, _body: Body) -> None:
        # Weight changes drop the engine's prefix cache by themselves; this drops it on request too.
        with self._adapters_lock:
            engines = [self.engine, *(a.engine for a in self.adapters.values())]
        for engine in engines:
            engine.reset_prefix_cache()
        return None

    def close(self) -> None:
        """Close the adapter samplers (the server closes the base engine itself)."""
        with self._adapters_lock:
            adapters, self.adapters = list(self.adapters.values()), {}
        for adapter in adapters:
            adapter.engine.close()

    def collective_rpc(self, body: Body) -> RpcReply:
        """vLLM's dev-mode route: call `method` on every worker and answer {"results": [...]}. The one
        worker here is the stand-in use_worker_extension made; without it every method is unknown."""
        body = expect_object(body)
        method = _string(body, "method")
        args, kwargs = body.get("args") or [], body.get("kwargs") or {}
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise bad_request("args: expected a list and kwargs an object")
        function = getattr(self.worker, method, None) if not method.startswith("_") else None
        if not callable(function):
            raise HttpError(
                500,
                f"Method {method!r} is not implemented by the worker (start the engine with --worker-extension-cls)",
                "InternalServerError",
            )
        try:
            result = function(*args, **kwargs)
        except (FileNotFoundError, ValueError, KeyError) as e:
            raise HttpError(
                500, f"collective_rpc {method} failed: {type(e).__name__}: {e}", "InternalServerError"
            ) from None
        # vLLM answers one entry per worker; None, dicts and lists as they are, anything else as str().
        return {"results": [result if result is None or isinstance(result, (dict, list)) else str(result)]}

    def use_worker_extension(self, extension: type) -> None:
        """Mix `extension` into a stand-in of vLLM's GPU worker, as `vllm serve --worker-extension-cls` does."""
        from .vllm_worker import StandinWorker

        self.worker = type(f"StandinWorker_{extension.__name__}", (StandinWorker, extension), {})(self.engine)

    # -- helpers ---------------------------------------------------------------------------------------
    def _prompts(self, prompt: Json) -> List[List[int]]:
        if isinstance(prompt, str) or (isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt)):
            raise bad_request("prompt: the embedded engine takes token IDs (a list of ints), not text")
        if not isinstance(prompt, list) or not prompt:
            raise bad_request("prompt: expected a non-empty list of token IDs (or a list of such lists)")
        batch = prompt if all(isinstance(p, list) for p in prompt) else [prompt]
        for i, ids in enumerate(batch):
            where = "prompt" if batch is not prompt else f"prompt[{i}]"
            if not ids:
                raise bad_request(f"{where}: empty")
            for j, t in enumerate(ids):
                if not _is_int(t) or not 0 <= t < self.vocab_size:
                    raise bad_request(f"{where}[{j}]: expected a token ID in [0, {self.vocab_size}), got {t!r}")
        return batch

    def _response(
        self,
        model: str,
        body: JsonObject,
        prompts: List[List[int]],
        results: List[List[Completion]],
        scores: Optional[List[List[Optional[float]]]] = None,
    ) -> CompletionReply:
        with_ids = bool(body.get("return_token_ids"))
        with_logprobs = body.get("logprobs") is not None
        choices: List[CompletionChoice] = []
        completion_tokens = 0
        for p, (prompt, completions) in enumerate(zip(prompts, results)):
            for c in completions:
                completion_tokens += len(c.token_ids)
                choices.append(
                    {
                        "index": len(choices),
                        "text": "",
                        "logprobs": _logprobs(c) if with_logprobs else None,
                        "finish_reason": c.finish_reason,
                        "stop_reason": c.stop_reason,
                        "prompt_logprobs": None if scores is None else _prompt_logprobs(prompt, scores[p]),
                        "prompt_token_ids": list(prompt) if with_ids else None,
                        "token_ids": c.token_ids if with_ids else None,
                    }
                )
        prompt_tokens = sum(len(p) for p in prompts)  # once per prompt, whatever n is, as vLLM counts
        # Likewise once per prompt: its first choice's (each choice is its own sequence here).
        cached_tokens = sum(r[0].cached_tokens for r in results if r)
        versions = sorted({c.policy_version for r in results for c in r})
        return {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": model,
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "completion_tokens": completion_tokens,
                "prompt_tokens_details": {"cached_tokens": cached_tokens},
            },
            # atk's addition: the trainer policy version(s) that sampled these choices.
            "policy_version": versions[0] if len(versions) == 1 else versions,
        }


def _logprobs(c: Completion) -> ChoiceLogprobs:
    return {
        "text_offset": [0] * len(c.token_ids),
        "token_logprobs": c.logprobs,
        "tokens": [f"token_id:{t}" for t in c.token_ids],
        "top_logprobs": [{f"token_id:{t}": lp for t, lp in top.items()} for top in c.top_logprobs],
    }


def _prompt_logprobs_asked(body: JsonObject) -> bool:
    """vLLM's `prompt_logprobs: k`: the prompt tokens' own logprobs (k = 0) plus the k most likely tokens at
    each position. Only k = 0 is served here: scoring a sequence needs no alternatives, and top-k would need
    the full (T, V) logits the chunked computation avoids."""
    k = body.get("prompt_logprobs")
    if k is None:
        return False
    if k != 0 or not _is_int(k):
        raise bad_request(f"prompt_logprobs: the embedded engine serves 0 (the prompt tokens' own), got {k!r}")
    return True


def _prompt_logprobs(prompt: List[int], scores: List[Optional[float]]) -> List[Optional[Dict[str, Json]]]:
    """vLLM's shape: None for the first token, then {token id: {logprob, rank, decoded_token}} per position
    (rank needs the full logits, so it is null; there is no tokenizer, so the token is `token_id:N`).
    -inf is clamped to -9999 as vLLM does: JSON has no infinity."""
    return [None] + [
        {str(t): {"logprob": max(lp, -9999.0), "rank": None, "decoded_token": f"token_id:{t}"}}
        for t, lp in zip(prompt[1:], scores[1:])
    ]


def _sampling_params(body: JsonObject) -> SamplingParams:
    max_tokens = _number(body, "max_tokens", 16, integer=True, low=1)
    temperature = _number(body, "temperature", 1.0, low=0.0)
    top_p = _number(body, "top_p", 1.0, low=0.0)
    if not 0 < top_p <= 1:
        raise bad_request(f"top_p: must be in (0, 1], got {top_p}")
    top_k = _number(body, "top_k", -1, integer=True, low=-1)
    n = _number(body, "n", 1, integer=True, low=1)
    if n > MAX_N:
        raise bad_request(f"n: at most {MAX_N}, got {n}")
    best_of = body.get("best_of")
    if best_of is not None and best_of != n:
        raise bad_request("best_of: not supported by the embedded engine (leave it out or equal to n)")
    seed = body.get("seed")
    if seed is not None and not _is_int(seed):
        raise bad_request(f"seed: expected an integer or null, got {seed!r}")
    stop_ids = body.get("stop_token_ids") or []
    if not isinstance(stop_ids, list) or not all(_is_int(t) for t in stop_ids):
        raise bad_request(f"stop_token_ids: expected a list of token IDs, got {stop_ids!r}")
    logprobs = body.get("logprobs")
    if logprobs is not None and (not _is_int(logprobs) or not 0 <= logprobs <= MAX_LOGPROBS):
        raise bad_request(f"logprobs: expected an integer in [0, {MAX_LOGPROBS}] or null, got {logprobs!r}")
    ignore_eos = body.get("ignore_eos", False)
    if not isinstance(ignore_eos, bool):
        raise bad_request(f"ignore_eos: expected a boolean, got {ignore_eos!r}")
    return SamplingParams(
        max_tokens=max_tokens,
        temperature=float(temperature),
        top_p=float(top_p),
        top_k=top_k,
        seed=seed,
        stop_token_ids=tuple(stop_ids),
        ignore_eos=ignore_eos,
        logprobs=logprobs,
        n=n,
    )


def _string(body: JsonObject, key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise bad_request(f"{key}: expected a non-empty string, got {value!r}")
    return value


def _number(
    body: JsonObject, key: str, default: Union[int, float], integer: bool = False, low: Optional[float] = None
) -> Union[int, float]:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not _is_int(value)):
        raise bad_request(f"{key}: expected {'an integer' if integer else 'a number'}, got {value!r}")
    if low is not None and value < low:
        raise bad_request(f"{key}: must be >= {low}, got {value}")
    return value


def _is_int(value: Json) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
