"""The control API (trainer/PROTOCOL.md): load a model, train, save, restore, health, shutdown.

Every call that changes weights runs inside `engine.exclusive()`: admissions stop, running
generations finish, then the call runs with the model to itself, and the engine afterwards serves
the new weights stamped with the new policy version.

With more than one trainer rank (`peers`, atk_trainer.train.distributed) rank 0 sends each command to the
other ranks once the request has passed the checks that need no model, and they run these same
handlers around an engine that never starts.
"""
from __future__ import annotations

import os
from contextlib import nullcontext
from typing import TYPE_CHECKING, ContextManager, Optional

import torch

from ..errors import HttpError, bad_request, expect_object
from ..model.modeling import DTYPES, INITS, load_policy
from ..train.batch import BatchError
from ..train.config import ConfigError, parse_config
from ..train.distributed import Peers
from ..train.memory import TrainerOutOfMemory
from .engine_api import EngineApi
from .engine import Engine
from .serving_copy import ServingCopy, serving_dtype
from .static_decode import decode_step_for
from .wire import Body, CheckpointReply, HealthReply, LoadModelReply, LogprobsReply, ShutdownReply, TrainStepReply

if TYPE_CHECKING:
    from ..train.train import Trainer

SAVE_DTYPES = {name: dtype for name, dtype in DTYPES.items() if dtype is not None}  # no "auto"


class ControlApi:
    def __init__(self, engine: Engine, engine_api: EngineApi, peers: Optional[Peers] = None):
        self.engine = engine
        self.engine_api = engine_api
        self.peers = peers  # with more than one rank, else None
        self.trainer: Optional["Trainer"] = None
        self.serving: Optional[ServingCopy] = None  # the engine's bf16 copy of float32 master weights (CUDA)

    def _command(self, name: str, body: Body) -> ContextManager[None]:
        return nullcontext() if self.peers is None else self.peers.command(name, body)

    def health(self, _body: Body) -> HealthReply:
        return {
            "status": "ok",
            "model_loaded": self.trainer is not None,
            "policy_version": self.engine.policy_version,
            "pid": os.getpid(),
        }

    def load_model(self, body: Body) -> LoadModelReply:
        body = expect_object(body)
        known = {"path", "init", "backend", "device", "dtype", "max_model_len", "train"}
        unknown = sorted(set(body) - known)
        if unknown:
            raise bad_request(f"unknown key {unknown[0]} (known: {', '.join(sorted(known))})")
        path = body.get("path")
        if not isinstance(path, str) or not path:
            raise bad_request(f"path: expected a model directory, got {path!r}")
        init = body.get("init", "pretrained")
        if init not in INITS:
            raise bad_request(f"init: expected one of {', '.join(INITS)}, got {init!r}")
        options = {key: body.get(key, "auto") for key in ("backend", "device", "dtype")}
        for key, value in options.items():
            if not isinstance(value, str):
                raise bad_request(f"{key}: expected a string, got {value!r}")
        max_model_len = body.get("max_model_len")
        if max_model_len is not None and (
            isinstance(max_model_len, bool) or not isinstance(max_model_len, int) or max_model_len < 1
        ):
            raise bad_request(f"max_model_len: expected a positive integer, got {max_model_len!r}")
        from ..train.train import Trainer  # imported here so the engine runs even if training code is missing

        try:
            config = parse_config(body.get("train"))
            with self.engine.exclusive(), self._command("load_model", body):
                policy = load_policy(path, init=init, seed=config.seed, **options)
                trainer = Trainer(policy, config, self.peers)
                self.trainer = trainer
                dtype = serving_dtype(
                    trainer.device, trainer.autocast, config.lora is not None, trainer.sharded, config.weights_dtype
                )
                self.serving = None if dtype is None else ServingCopy(policy, dtype)
                decode_step = decode_step_for(trainer.device, config.cuda_graphs)
                if self.serving is None:
                    self.engine.set_policy(policy, autocast=trainer.autocast, decode_step=decode_step)
                else:  # bf16 weights served as they are: no autocast
                    self.engine.set_policy(self.serving.policy, autocast=False, decode_step=decode_step)
                self.engine.policy_version = trainer.policy_version
                self.engine_api.model_loaded(policy.config, policy.path, max_model_len)
        except (ConfigError, FileNotFoundError, ValueError, ImportError) as e:
            raise bad_request(f"{type(e).__name__}: {e}") from None
        module = self.trainer.policy.module
        return {
            "model": self.engine_api.served_name,
            "backend": policy.backend,
            "device": str(policy.device),
            "parameters": _count(module, trainable=False),
            "trainable_parameters": _count(module, trainable=True),
            "policy_version": self.trainer.policy_version,
            "micro_batch_tokens": self.trainer.micro_batch_tokens,
        }

    def train_step(self, body: Body) -> TrainStepReply:
        trainer = self._trainer()
        try:
            with self.engine.exclusive(), self._command("train_step", body):
                try:
                    metrics = trainer.step(expect_object(body))
                finally:  # a step that failed after an update (updates_per_step > 1) changed weights too
                    self._refresh_serving()
                self.engine.policy_version = trainer.policy_version
        except (BatchError, ConfigError) as e:
            raise bad_request(str(e)) from None
        except TrainerOutOfMemory as e:
            raise HttpError(507, str(e), "OutOfMemoryError") from None
        return {"policy_version": trainer.policy_version, "metrics": metrics}

    def logprobs(self, body: Body) -> LogprobsReply:
        """The trainer's own logprobs of a token sequence on its current weights (atk's check after a weight
        sync): one no-grad forward, with the weights held so no train step changes them under it."""
        trainer = self._trainer()
        ids = expect_object(body).get("token_ids")
        vocab = trainer.vocab_size
        if not isinstance(ids, list) or len(ids) < 2:
            raise bad_request(f"token_ids: expected a list of at least 2 token IDs, got {ids!r}")
        for i, t in enumerate(ids):
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vocab:
                raise bad_request(f"token_ids[{i}]: expected a token ID in [0, {vocab}), got {t!r}")
        with self.engine.weights_held():
            return {"policy_version": trainer.policy_version, "logprobs": [None, *trainer.sequence_logprobs(ids)]}

    def save(self, body: Body) -> CheckpointReply:
        trainer, directory, body = self._trainer(), _dir(body), expect_object(body)
        weights_only = body.get("weights_only", False)
        if not isinstance(weights_only, bool):
            raise bad_request(f"weights_only: expected a boolean, got {weights_only!r}")
        dtype = body.get("dtype")
        if dtype is not None and (not weights_only or dtype not in SAVE_DTYPES):
            raise bad_request(f"dtype: one of {', '.join(SAVE_DTYPES)}, with weights_only true; got {dtype!r}")
        with self.engine.exclusive(), self._command("save", body):
            return trainer.save(
                directory, weights_only=weights_only, dtype=None if dtype is None else SAVE_DTYPES[dtype]
            )

    def load_checkpoint(self, body: Body) -> CheckpointReply:
        trainer, directory = self._trainer(), _dir(body)
        try:
            with self.engine.exclusive(), self._command("load_checkpoint", body):
                result = trainer.load(directory)
                self._refresh_serving()
                self.engine.policy_version = trainer.policy_version
        except (FileNotFoundError, ValueError) as e:
            raise bad_request(f"{type(e).__name__}: {e}") from None
        return result

    def shutdown(self, body: Body) -> ShutdownReply:
        # The server stops itself once this reply is written; the other ranks end on the command.
        with self._command("shutdown", body):
            return {"status": "shutting down"}

    def _refresh_serving(self) -> None:
        if self.serving is not None:
            self.serving.refresh()

    def _trainer(self) -> "Trainer":
        if self.trainer is None:
            raise HttpError(409, "no model loaded: POST /control/load_model first", "ConflictError")
        return self.trainer


def _dir(body: Body) -> str:
    directory = expect_object(body).get("dir")
    if not isinstance(directory, str) or not directory:
        raise bad_request(f"dir: expected a directory path, got {directory!r}")
    return directory


def _count(module: torch.nn.Module, trainable: bool) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable)
