"""The embedded engine's sampler: one thread decodes every running request together.

Requests are queued; the decode loop admits them between steps (continuous batching: a request that
arrives while others decode joins at the next step, its prompt prefilled into the shared KV cache),
feeds each running sequence its last sampled token, samples with per-request settings and retires
finished sequences. The transformers backend cannot merge caches, so there a batch runs until all
its sequences finish before new requests are admitted.

Weights: the loop reads `policy.module` at every step. `exclusive()` is how the trainer changes
weights: it stops admissions, waits until running sequences finish, and holds the model lock, so
every completion is sampled by exactly one policy version, which it reports. The built-in decoder
outlives its batch while the weights stay the same, so an agent's next turn reuses the keys and
values of its previous one (a prefix cache, up to `prefix_cache_tokens`: prefix_budget.py); exclusive()
drops it, so the parked keys and values, stale once the weights change, free their memory for the train
step, and the next batch starts a new decoder.
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional

import torch

from ..log import log
from ..train import sync_fault
from .decoders import make_decoder
from .row_sampling import RowSampling
from .sampling_params import SamplingParams
from .static_decode import DECODE_STEPS, StaticDecodeStep


@dataclass
class Completion:
    token_ids: List[int]
    logprobs: List[float]  # of each sampled token under the distribution it was sampled from
    top_logprobs: List[Dict[int, float]]  # per position: sampled token + `logprobs` most likely (empty if not asked)
    finish_reason: str  # "stop" | "length"
    stop_reason: Optional[int]  # the stop_token_ids entry that ended it; None for eos or length
    policy_version: int
    cached_tokens: int = 0  # leading prompt tokens whose keys and values came from the prefix cache


class Request:
    """One queued prompt with n choices; `wait()` blocks until all are done."""

    def __init__(self, prompt: List[int], params: SamplingParams):
        self.prompt, self.params = prompt, params
        self.completions: List[Optional[Completion]] = [None] * params.n
        self.error: Optional[BaseException] = None
        self._done = threading.Event()
        self._left = params.n

    def wait(self, timeout: Optional[float] = None) -> List[Completion]:
        if not self._done.wait(timeout):
            raise TimeoutError("generation did not finish in time")
        if self.error is not None:
            raise self.error
        return [c for c in self.completions if c is not None]

    def _finish(self, index: int, completion: Completion) -> None:
        self.completions[index] = completion
        self._left -= 1
        if self._left == 0:
            self._done.set()

    def _fail(self, error: BaseException) -> None:
        self.error = error
        self._done.set()


SEED_SPACE = 1 << 63  # sequence seeds are int64


@dataclass
class _Sequence:
    request: Request
    index: int  # choice index within the request
    seed: int  # its request's seed + index, or one drawn from the engine's generator: fixes its random draws
    policy_version: int
    cached_tokens: int = 0  # of its prompt, taken from the prefix cache at its prefill
    tokens: List[int] = field(default_factory=list)
    logprobs: List[float] = field(default_factory=list)
    tops: List[Dict[int, float]] = field(default_factory=list)


class Engine:
    """Continuous-batching sampler over a Policy (atk_trainer.model.modeling); start() runs its thread."""

    def __init__(self, max_batch: int = 256, seed: int = 0, prefix_cache_tokens: Optional[int] = None):
        self.max_batch = max_batch  # sequences decoded together; more wait in the queue
        self.prefix_cache_tokens = prefix_cache_tokens  # tokens kept for continuations; None: from free memory
        self.seed = seed  # of the shared generator requests without a seed draw from
        self.policy: Any = None
        self.policy_version = 0  # stamped on completions; the server bumps it after each train step
        self.eos_token_ids: List[int] = []
        self.autocast = False  # bf16 autocast on CUDA, matching the trainer's forward
        self.decode_step = "dynamic"  # or "static" / "graphs": the built-in model's decode step (static_decode.py)
        self._static: Optional[StaticDecodeStep] = None  # kept across batches: it holds the CUDA graphs
        self._decoder: Any = None  # the running batch's, kept while idle for its parked sequences
        self._decoder_epoch = -1  # the _cache_epoch it was made in
        self._budget_logged = False
        self._shared_rng = torch.Generator().manual_seed(seed)  # draws the seeds of requests without one
        self._rows = RowSampling()  # the running rows' sampling settings, on the model's device
        self._cond = threading.Condition()
        self._queue: List[_Sequence] = []
        self._running: List[_Sequence] = []
        self._pauses = 0
        self._cache_epoch = 0  # bumped by exclusive(), set_policy and reset_prefix_cache: cached keys go stale
        self._prompt_tokens = {"prefilled": 0, "reused": 0}  # since start: computed, or taken from the prefix cache
        self._closed = False
        self._model_lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="atk-engine", daemon=True)

    def start(self) -> "Engine":
        self._thread.start()
        return self

    def set_policy(self, policy: Any, autocast: bool = False, decode_step: str = "dynamic") -> None:
        """Serve `policy` (call inside exclusive()). Stops on its config's eos_token_id unless ignore_eos.
        decode_step: "dynamic" (shapes follow the cache), "static" (fixed shapes, eager) or "graphs"
        (fixed shapes replayed as CUDA graphs; static_decode.decode_step_for picks it on CUDA)."""
        if decode_step not in DECODE_STEPS:
            raise ValueError(f"decode_step: expected one of {', '.join(DECODE_STEPS)}, got {decode_step!r}")
        eos = policy.config.get("eos_token_id")
        self.policy, self.autocast, self.decode_step, self._static = policy, autocast, decode_step, None
        self._cache_epoch += 1
        self.eos_token_ids = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))

    def submit(self, prompt: List[int], params: SamplingParams) -> Request:
        request = Request(list(prompt), params)
        with self._cond:
            if self._closed:
                raise RuntimeError("the engine is shut down")
            if self.policy is None:
                raise RuntimeError("no model loaded: POST /control/load_model first")
            for i in range(params.n):
                if params.seed is not None:
                    seed = (params.seed + i) % SEED_SPACE
                else:
                    seed = int(torch.randint(0, SEED_SPACE // 2, (1,), generator=self._shared_rng))
                self._queue.append(_Sequence(request, i, seed, self.policy_version))
            self._cond.notify_all()
        return request

    def generate(self, prompt: List[int], params: SamplingParams, timeout: Optional[float] = None) -> List[Completion]:
        return self.submit(prompt, params).wait(timeout)

    def prompt_logprobs(self, prompt: List[int]) -> List[Optional[float]]:
        """log p(prompt[t] | prompt[:t]) for each position under the served weights (None at t = 0, which
        nothing predicts): what vLLM's `prompt_logprobs` reports, e.g. for a teacher scoring a student's
        tokens. One forward pass beside the decode loop; the model lock keeps weights from changing under it."""
        if self.policy is None:
            raise RuntimeError("no model loaded: POST /control/load_model first")
        with self._model_lock, torch.no_grad(), self._autocast():
            ids = torch.tensor([prompt], device=self.policy.device)  # (1, T)
            logp, _, _ = self.policy.token_stats(ids)  # (1, T) float32, 0 at t = 0
        return [None] + logp[0, 1:].tolist()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the model with no generation running: admissions stop, running sequences finish first."""
        with self._cond:
            self._pauses += 1
            while self._running:
                self._cond.wait()
        forget = not sync_fault.keeps_prefix_cache()  # True but in the sync probe's tests
        try:
            with self._model_lock:
                if forget:
                    self._decoder = None  # its parked keys and values go stale now: their memory is the step's
                yield
        finally:
            with self._cond:
                self._pauses -= 1
                self._cache_epoch += forget
                self._cond.notify_all()

    @contextlib.contextmanager
    def weights_held(self) -> Iterator[None]:
        """Hold the weights as they are (no train step or reload changes them meanwhile); generation goes on."""
        with self._model_lock:
            yield

    def reset_prefix_cache(self) -> None:
        """Forget finished sequences kept for their continuations (the next batch starts a new decoder)."""
        with self._cond:
            self._cache_epoch += 1

    def close_when_idle(self) -> None:
        """Close once every queued and running sequence has finished, on a background thread: requests
        already submitted complete, and the caller does not wait for them."""

        def wait_then_close() -> None:
            with self._cond:
                while (self._queue or self._running) and not self._closed:
                    self._cond.wait(timeout=1.0)
            self.close()

        threading.Thread(target=wait_then_close, name="atk-engine-drain", daemon=True).start()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        for seq in self._queue + self._running:
            seq.request._fail(RuntimeError("the engine shut down"))

    def stats(self) -> Dict[str, int]:
        """Sequences running and waiting; prompt tokens since start, each prefilled (computed) or reused
        (keys and values taken from the prefix cache), one count per sequence (a request's n choices each);
        tokens the prefix cache holds now, and may hold (the latest decoder's budget; 0 before the first
        batch, after a weight change and for a backend without a prefix cache)."""
        with self._cond:
            decoder = self._decoder
            return {
                "running": len(self._running),
                "waiting": len(self._queue),
                "prefilled_tokens": self._prompt_tokens["prefilled"],
                "reused_tokens": self._prompt_tokens["reused"],
                "parked_tokens": getattr(decoder, "parked_tokens", 0),
                "prefix_cache_tokens": getattr(decoder, "park_budget", 0),
            }

    # -- the decode loop ------------------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and not self._running and (not self._queue or self._pauses):
                    self._cond.wait()
                if self._closed:
                    return
                admitted: List[_Sequence] = []
                joinable = self._decoder is not None and self._decoder.joinable
                if not self._pauses and (not self._running or joinable):
                    room = self.max_batch - len(self._running)
                    admitted, self._queue = self._queue[:room], self._queue[room:]
                    for seq in admitted:  # the version a sequence reports is the one that samples it
                        seq.policy_version = self.policy_version
                    # Running from now on, so exclusive() waits for them even before their prefill.
                    self._running = self._running + admitted
            try:
                with self._model_lock, torch.no_grad(), self._autocast():
                    if len(admitted) == len(self._running) and not self._reusable():
                        self._decoder = None  # the old one's memory counts as free for the new one's prefix cache
                        self._decoder = make_decoder(self.policy, self._static_step(), self.prefix_cache_tokens)
                        self._decoder_epoch = self._cache_epoch
                        self._log_budget(self._decoder)
                    # No local reference to it: exclusive() must be able to free it while this thread waits.
                    if admitted:
                        budget = max(s.request.params.max_tokens for s in admitted)
                        logits = self._decoder.prefill([s.request.prompt for s in admitted], budget)  # (B_new, V)
                        self._count_prompt_tokens(admitted, self._decoder.reused)
                        self._rows.join([s.request.params for s in admitted], [s.seed for s in admitted], logits.device)
                        self._advance(self._decoder, admitted, logits)
                    else:
                        logits = self._decoder.decode([s.tokens[-1] for s in self._running])  # (B, V)
                        self._advance(self._decoder, self._running, logits)
            except BaseException as error:  # noqa: BLE001 - a failing batch fails its requests, not the server
                with self._cond:
                    for seq in self._running:
                        seq.request._fail(error)
                    self._running = []
                    self._rows.clear()
                    self._decoder = None
                    self._cond.notify_all()

    def _count_prompt_tokens(self, admitted: List[_Sequence], reused: List[int]) -> None:
        with self._cond:
            for seq, n in zip(admitted, reused):
                seq.cached_tokens = n
                self._prompt_tokens["reused"] += n
                self._prompt_tokens["prefilled"] += len(seq.request.prompt) - n

    def _log_budget(self, decoder: Any) -> None:
        """The first prefix-cache budget, in trainer.log: what `auto` came to on this machine."""
        budget = getattr(decoder, "park_budget", None)
        if budget is None or self._budget_logged:
            return
        self._budget_logged = True
        setting = "auto" if self.prefix_cache_tokens is None else "model.engine.prefix_cache_tokens"
        mib = budget * decoder.slot_bytes / (1 << 20)
        log(f"prefix cache: {budget} tokens ({mib:.0f} MiB) for finished sequences' continuations ({setting})")

    def _static_step(self) -> Optional[StaticDecodeStep]:
        if self.decode_step == "dynamic":
            return None
        if self._static is None or self._static.module is not self.policy.module:
            self._static = StaticDecodeStep(self.policy.module, capture=self.decode_step == "graphs")
        return self._static

    def _reusable(self) -> bool:
        """Whether an idle decoder may serve the next batch: one that keeps finished sequences for their
        continuations (a prefix cache), and only with the weights it cached them under."""
        decoder = self._decoder
        return (
            decoder is not None
            and getattr(decoder, "reusable", False)
            and self._decoder_epoch == self._cache_epoch
            and decoder.module is self.policy.module
        )

    def _advance(self, decoder, rows: List[_Sequence], logits: torch.Tensor) -> None:
        """Sample one token for each of `rows` (the last rows of the running batch), retire finished ones."""
        sampled = self._rows.step(logits, len(self._running) - len(rows))
        for i, seq in enumerate(rows):
            token, logprob = sampled.tokens[i], sampled.logprobs[i]
            seq.tokens.append(token)
            seq.logprobs.append(logprob)
            asked = seq.request.params.logprobs
            if asked is not None:
                top = {token: logprob}
                top.update(zip(sampled.top_ids[i][:asked], sampled.top_logprobs[i][:asked]))
                seq.tops.append(top)
        finished = [(seq, self._finish_reason(seq)) for seq in self._running]
        done = [(seq, reason) for seq, reason in finished if reason is not None]
        if not done:
            return
        keep = [i for i, (_, reason) in enumerate(finished) if reason is None]
        decoder.keep(keep)
        self._rows.keep(keep)
        with self._cond:
            self._running = [self._running[i] for i in keep]
            self._cond.notify_all()
        for seq, (reason, stop_reason) in done:
            seq.request._finish(
                seq.index,
                Completion(
                    seq.tokens,
                    seq.logprobs,
                    seq.tops,
                    reason,
                    stop_reason,
                    seq.policy_version,
                    seq.cached_tokens,
                ),
            )

    def _finish_reason(self, seq: _Sequence):
        p = seq.request.params
        last = seq.tokens[-1]
        if last in p.stop_token_ids:
            return "stop", last
        if not p.ignore_eos and last in self.eos_token_ids:
            return "stop", None
        if len(seq.tokens) >= p.max_tokens:
            return "length", None
        return None

    def _autocast(self):
        if self.autocast:  # a captured graph must not keep autocast's cached weight casts
            return torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=self.decode_step != "graphs")
        return contextlib.nullcontext()
