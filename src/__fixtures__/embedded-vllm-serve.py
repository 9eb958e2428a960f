"""A `vllm serve`-compatible wrapper around atk's embedded engine, for launcher tests.

Takes vLLM's command line (`<model> --host H --port P --served-model-name N ...`; flags it has no use
for are printed and ignored), serves the trainer's engine routes on --port, and loads <model> the way
vLLM does before /health turns 200 (ATK_STANDIN_INIT=random initialises from config.json). A model
that fails to load ends the process with exit code 1, as vLLM's does. `--worker-extension-cls` is
imported as vLLM imports it and mixed into the engine's stand-in worker, so /collective_rpc runs it.
"""
import argparse
import importlib
import json
import os
import signal
import sys
import threading
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "trainer"))

from atk_trainer.server import TrainerServer  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(prog="embedded-vllm-serve")
    p.add_argument("model")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--served-model-name", default="policy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--worker-extension-cls", default=None)
    args, ignored = p.parse_known_args()
    env = {k: os.environ.get(k, "") for k in ("CUDA_VISIBLE_DEVICES", "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "VLLM_SERVER_DEV_MODE")}
    print(f"embedded-vllm-serve: pid {os.getpid()}, model {args.model}, ignoring {ignored}, env {json.dumps(env)}", flush=True)
    app = TrainerServer(args.host, args.port, served_name=args.served_model_name, seed=args.seed)
    if args.worker_extension_cls:
        module, _, name = args.worker_extension_cls.rpartition(".")
        app.engine_api.use_worker_extension(getattr(importlib.import_module(module), name))
        print(f"embedded-vllm-serve: worker extension {args.worker_extension_cls}", flush=True)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: app.stop(f"signal {signum}"))
    failed = threading.Event()

    def load() -> None:
        body = {"path": args.model, "init": os.environ.get("ATK_STANDIN_INIT", "pretrained"), "backend": "builtin", "device": "cpu", "dtype": "float32"}
        request = urllib.request.Request(f"http://127.0.0.1:{app.port}/control/load_model", data=json.dumps(body).encode(), headers={"content-type": "application/json"})
        try:
            urllib.request.urlopen(request, timeout=600).read()
            print(f"embedded-vllm-serve: model loaded, serving {args.served_model_name}", flush=True)
        except Exception as error:  # noqa: BLE001 (any failure ends the server, as a failed vLLM load does)
            detail = error.read().decode() if hasattr(error, "read") else str(error)
            print(f"embedded-vllm-serve: model load failed: {detail}", flush=True)
            failed.set()
            app.stop("model load failed")

    threading.Thread(target=load, name="load-model", daemon=True).start()
    app.serve()
    return 1 if failed.is_set() else 0


if __name__ == "__main__":
    sys.exit(main())
