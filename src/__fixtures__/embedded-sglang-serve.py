"""A `python -m sglang.launch_server`-compatible wrapper around atk's embedded engine, for launcher tests.

Takes SGLang's command line (`--model-path M --host H --port P --served-model-name N ...`; flags it has
no use for are printed and ignored) and serves the routes atk's SGLang client and weight sync call, in
SGLang 0.5's shapes (docs/engines.md, SGLang), by translating them to the embedded engine:
native `/generate` (input_ids, sampling_params, return_logprob; `lora_path` names a loaded adapter;
`logprob_start_len` 0 adds the prompt's input_token_logprobs, as a scorer asks for them),
`/load_lora_adapter` and `/unload_lora_adapter` (served as base + adapter, engine_api.py),
`/flush_cache`, `/update_weights_from_disk` (the stand-in worker's reload, vllm_worker.WeightReload),
`/get_model_info` with the weight version, and `/get_server_info` with the version below.
"""
import argparse
import json
import os
import sys

from standin_serve import TrainerServer, serve
from atk_trainer.errors import HttpError, expect_object  # noqa: E402 (standin_serve put the trainer on sys.path)
from atk_trainer.vllm_worker import WeightReload  # noqa: E402

VERSION = "0.5.4"


class SglangRoutes:
    def __init__(self, app: TrainerServer, model_path: str):
        self.app = app
        self.model_path = model_path
        self.weight_version = "default"

    def install(self) -> None:
        # The reload vLLM's extension does is what update_weights_from_disk does: the same stand-in worker runs it.
        self.app.engine_api.use_worker_extension(WeightReload)
        self.app.routes.update({
            ("POST", "/generate"): self.generate,
            ("POST", "/load_lora_adapter"): self.load_lora_adapter,
            ("POST", "/unload_lora_adapter"): self.unload_lora_adapter,
            ("POST", "/flush_cache"): self.flush_cache,
            ("POST", "/update_weights_from_disk"): self.update_weights_from_disk,
            ("GET", "/get_model_info"): self.model_info,
            ("GET", "/get_server_info"): lambda _body: {"version": VERSION},
        })

    def generate(self, body):
        body = expect_object(body)
        s = body.get("sampling_params") or {}
        api = self.app.engine_api
        completion = {
            "model": body.get("lora_path") or api.served_name, "prompt": body.get("input_ids"),
            "max_tokens": s.get("max_new_tokens", 128), "temperature": s.get("temperature", 1.0), "top_p": s.get("top_p", 1.0),
            "top_k": s.get("top_k", -1), "n": s.get("n", 1), "seed": s.get("sampling_seed"),
            "stop_token_ids": s.get("stop_token_ids") or [], "logprobs": 0, "return_token_ids": True,
        }
        scored = body.get("return_logprob") and body.get("logprob_start_len") == 0
        if scored:
            completion["prompt_logprobs"] = 0
        try:
            reply = api.completions(completion)
        except HttpError as e:
            if e.status == 404:  # an unknown adapter: SGLang names the lora_path it cannot find
                raise HttpError(400, f"lora_path {completion['model']!r} is not loaded", "BadRequestError") from None
            raise
        results = [{
            "text": "", "output_ids": c["token_ids"],
            "meta_info": {
                "finish_reason": {"type": c["finish_reason"]}, "prompt_tokens": len(completion["prompt"]),
                "completion_tokens": len(c["token_ids"]), "weight_version": self.weight_version,
                "output_token_logprobs": [[lp, t, None] for lp, t in zip(c["logprobs"]["token_logprobs"], c["token_ids"])],
                **({"input_token_logprobs": _input_logprobs(completion["prompt"], c["prompt_logprobs"])} if scored else {}),
            },
        } for c in reply["choices"]]
        return results if completion["n"] > 1 else results[0]

    def load_lora_adapter(self, body):
        self.app.engine_api.load_lora_adapter(expect_object(body))  # a refusal is a 400, as SGLang's
        return {"success": True, "error_message": None, "loaded_adapters": self._loaded()}

    def unload_lora_adapter(self, body):
        try:
            self.app.engine_api.unload_lora_adapter(expect_object(body))
        except HttpError as e:
            raise HttpError(400, e.message, "BadRequestError") from None
        return {"success": True, "error_message": None, "loaded_adapters": self._loaded()}

    def flush_cache(self, _body):
        self.app.engine_api.reset_prefix_cache(None)
        return "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n"

    def update_weights_from_disk(self, body):
        body = expect_object(body)
        path = str(body.get("model_path"))
        if not os.path.isfile(os.path.join(path, "config.json")):
            raise HttpError(400, f"Failed to update weights: no config.json in {path}")
        version = body.get("weight_version")
        try:
            self.app.engine_api.worker.atk_reload_weights(path, version if isinstance(version, str) else self.weight_version)
        except (FileNotFoundError, KeyError, ValueError) as e:
            raise HttpError(400, f"Failed to update weights: {e}") from None
        self.model_path = path
        if isinstance(version, str):
            self.weight_version = version
        return {"success": True, "message": "Succeeded to update model weights.", "num_paused_requests": 0}

    def model_info(self, _body):
        return {"model_path": self.model_path, "is_generation": True, "weight_version": self.weight_version}

    def _loaded(self):
        return {name: adapter.path for name, adapter in self.app.engine_api.adapters.items()}


def _input_logprobs(prompt, scored):
    """SGLang's [[logprob, token id, text], ...] of the prompt from vLLM's prompt_logprobs (None at the first token)."""
    return [[None if entry is None else entry[str(t)]["logprob"], t, None] for t, entry in zip(prompt, scored)]


def main() -> int:
    p = argparse.ArgumentParser(prog="embedded-sglang-serve")
    p.add_argument("--model-path", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--served-model-name", default="policy")
    p.add_argument("--random-seed", type=int, default=0)
    args, ignored = p.parse_known_args()
    env = {k: os.environ.get(k, "") for k in ("CUDA_VISIBLE_DEVICES",)}
    print(f"embedded-sglang-serve: pid {os.getpid()}, model {args.model_path}, ignoring {ignored}, env {json.dumps(env)}", flush=True)
    app = TrainerServer(args.host, args.port, served_name=args.served_model_name, seed=args.random_seed)
    SglangRoutes(app, args.model_path).install()
    return serve("embedded-sglang-serve", app, args.model_path, args.served_model_name)


if __name__ == "__main__":
    sys.exit(main())
