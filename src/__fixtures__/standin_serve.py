"""What the engine stand-ins (embedded-vllm-serve.py, embedded-sglang-serve.py) share: serve the trainer's
engine routes and load the model in the background, as a real engine does before /health turns 200
(ATK_STANDIN_INIT=random initialises from config.json). A model that fails to load ends the process
with exit code 1, as a failed vLLM or SGLang load does."""
import json
import os
import signal
import sys
import threading
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "trainer"))

from atk_trainer.serve.server import TrainerServer  # noqa: E402


def serve(prog: str, app: TrainerServer, model: str, served_name: str) -> int:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: app.stop(f"signal {signum}"))
    failed = threading.Event()

    def load() -> None:
        body = {"path": model, "init": os.environ.get("ATK_STANDIN_INIT", "pretrained"), "backend": "builtin", "device": "cpu", "dtype": "float32"}
        host = app.httpd.server_address[0]
        auth = {"Authorization": f"Bearer {app.token}"} if app.token else {}
        request = urllib.request.Request(f"http://{host}:{app.port}/control/load_model", data=json.dumps(body).encode(), headers={"content-type": "application/json", **auth})
        try:
            urllib.request.urlopen(request, timeout=600).read()
            print(f"{prog}: model loaded, serving {served_name}", flush=True)
        except Exception as error:  # noqa: BLE001 (any failure ends the server, as a failed engine load does)
            detail = error.read().decode() if hasattr(error, "read") else str(error)
            print(f"{prog}: model load failed: {detail}", flush=True)
            failed.set()
            app.stop("model load failed")

    threading.Thread(target=load, name="load-model", daemon=True).start()
    app.serve()
    return 1 if failed.is_set() else 0
