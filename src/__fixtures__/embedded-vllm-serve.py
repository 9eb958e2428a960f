"""A `vllm serve`-compatible wrapper around atk's embedded engine, for launcher tests.

Takes vLLM's command line (`<model> --host H --port P --served-model-name N ...`; flags it has no use
for are printed and ignored) and serves the trainer's engine routes on --port (standin_serve.py).
`--worker-extension-cls` is imported as vLLM imports it and mixed into the engine's stand-in worker,
so /collective_rpc runs it.
"""
import argparse
import importlib
import json
import os
import sys

from standin_serve import TrainerServer, serve


def main() -> int:
    p = argparse.ArgumentParser(prog="embedded-vllm-serve")
    p.add_argument("model")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--served-model-name", default="policy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--worker-extension-cls", default=None)
    args, ignored = p.parse_known_args()
    env = {k: os.environ.get(k, "") for k in ("CUDA_VISIBLE_DEVICES", "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "VLLM_SERVER_DEV_MODE", "SLURMD_NODENAME", "ATK_HOST")}
    print(f"embedded-vllm-serve: pid {os.getpid()}, model {args.model}, ignoring {ignored}, env {json.dumps(env)}, on {args.host}:{args.port}", flush=True)
    app = TrainerServer(args.host, args.port, served_name=args.served_model_name, seed=args.seed)
    if args.worker_extension_cls:
        module, _, name = args.worker_extension_cls.rpartition(".")
        app.engine_api.use_worker_extension(getattr(importlib.import_module(module), name))
        print(f"embedded-vllm-serve: worker extension {args.worker_extension_cls}", flush=True)
    return serve("embedded-vllm-serve", app, args.model, args.served_model_name)


if __name__ == "__main__":
    sys.exit(main())
