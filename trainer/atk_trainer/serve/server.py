"""`python -m atk_trainer`: the trainer process. One stdlib HTTP server on loopback serves the
embedded engine (vLLM subset, engine_api.py) and the control API (control.py); see trainer/PROTOCOL.md.

Errors: a handler's HttpError or a malformed body is a 4xx, anything else a 500 with Python's last
exception line; the process keeps serving either way. Engine routes answer in vLLM's shape
`{"error": {"message", "type", "code"}}`, control routes in PROTOCOL.md's `{"error", "traceback"}`.
SIGTERM, SIGINT, POST /control/shutdown and the death of the parent process all end it cleanly.
Under torchrun with more than one rank (distributed.py) rank 0 is this server and the other ranks
follow its control commands; they serve nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from ..errors import HttpError
from ..log import log
from ..train.distributed import Peers, RankError, world_size
from .control import ControlApi
from .engine_api import EngineApi
from .engine import Engine
from .prefix_budget import parse_setting
from .wire import Body, Reply
from .run_token import authorized, required_token
from .weight_send import WeightSendApi

MAX_BODY = 512 * 1024 * 1024  # a train step of many long sequences is large, but not this large
PARENT_POLL_S = 0.5


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    # Adam's second moments and tiny gradients drift into subnormal floats over a run, and x86 CPUs
    # take a slow path on them. Without flushing the quickstart's training fell from ~2,500 to ~900
    # tokens/s after step 8; with it most late steps stay near 2,000 and the whole run took 77-83 s
    # of user CPU instead of 94-98 s (idle 2-core host, two runs each). No effect on CUDA.
    torch.set_flush_denormal(True)
    try:
        peers = Peers() if world_size() > 1 else None
    except RankError as e:
        sys.stderr.write(f"atk_trainer: {e}\n")
        return 2
    if peers is not None and not peers.leader:
        return follow(peers, args)
    app = TrainerServer(
        args.host,
        args.port,
        served_name=args.served_model_name,
        max_batch=args.max_batch,
        seed=args.seed,
        peers=peers,
        prefix_cache_tokens=args.prefix_cache_tokens,
    )
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: app.stop(f"signal {signum}"))
    watch_parent(args.parent_pid, app.stop)
    versions = f"torch {torch.__version__}, {args.threads} threads"
    if os.environ.get("OPENBLAS_CORETYPE"):
        versions += f", OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']}"
    log(f"atk_trainer pid {os.getpid()} serving on http://{args.host}:{app.port} ({versions})")
    app.serve()
    log("atk_trainer stopped")
    return 0


def follow(peers: Peers, args: argparse.Namespace) -> int:
    """Ranks > 0: no server and no log; run rank 0's commands until shutdown. SIGTERM (torchrun stopping
    its workers) keeps its default action; the parent's death ends the process as it ends rank 0."""
    watch_parent(args.parent_pid, lambda _reason: os._exit(0))
    engine = Engine(max_batch=args.max_batch, seed=args.seed)  # never started: the handlers only need its lock
    return peers.follow(ControlApi(engine, EngineApi(engine, args.served_model_name), peers))


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m atk_trainer", description="atk's trainer and embedded engine")
    p.add_argument(
        "--host", default="127.0.0.1", help="bind address; off loopback only with $ATK_RUN_TOKEN set (run_token.py)"
    )
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed on stdout)")
    p.add_argument("--parent-pid", type=int, default=None, help="exit when this process is gone")
    p.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (1 beat 2 here: bench/trainer-generate.py)"
    )
    p.add_argument("--served-model-name", default="policy", help="the model name /v1 requests use")
    p.add_argument("--max-batch", type=int, default=256, help="sequences the engine decodes together")
    p.add_argument("--seed", type=int, default=0, help="seeds sampling for requests without a seed")
    p.add_argument(
        "--prefix-cache-tokens",
        type=_prefix_cache_tokens,
        default=None,
        metavar="auto|N",
        help="tokens of finished sequences kept for their continuations; 0: none; auto: from free memory",
    )
    return p.parse_args(argv)


def _prefix_cache_tokens(text: str) -> Optional[int]:
    try:
        return parse_setting(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


class TrainerServer:
    """The engine thread, the route table and the HTTP server; serve() blocks until stop()."""

    def __init__(
        self,
        host: str,
        port: int,
        served_name: str = "policy",
        max_batch: int = 256,
        seed: int = 0,
        peers: Optional[Peers] = None,
        prefix_cache_tokens: Optional[int] = None,
    ):
        self.engine = Engine(max_batch=max_batch, seed=seed, prefix_cache_tokens=prefix_cache_tokens).start()
        self.engine_api = EngineApi(self.engine, served_name)
        self.control = ControlApi(self.engine, self.engine_api, peers)
        e, c, w = self.engine_api, self.control, WeightSendApi(self.control, host)
        self.routes: Dict[Tuple[str, str], Callable[[Body], Reply]] = {
            ("GET", "/health"): e.health,
            ("GET", "/v1/models"): e.models,
            ("POST", "/v1/completions"): e.completions,
            ("POST", "/v1/load_lora_adapter"): e.load_lora_adapter,
            ("POST", "/v1/unload_lora_adapter"): e.unload_lora_adapter,
            ("POST", "/reset_prefix_cache"): e.reset_prefix_cache,
            ("POST", "/collective_rpc"): e.collective_rpc,
            ("GET", "/control/health"): c.health,
            ("POST", "/control/load_model"): c.load_model,
            ("POST", "/control/train_step"): c.train_step,
            ("POST", "/control/save"): c.save,
            ("POST", "/control/load_checkpoint"): c.load_checkpoint,
            ("POST", "/control/logprobs"): c.logprobs,
            ("POST", "/control/shutdown"): c.shutdown,
            ("POST", "/control/weights/open"): w.open,
            ("POST", "/control/weights/join"): w.join,
            ("POST", "/control/weights/send"): w.send,
        }
        self.token = required_token(host)
        self.httpd = _HttpServer((host, port), _handler_class(self))
        if self.token is not None:
            log("requests need the per-run token (Authorization: Bearer); others get 401")
        self.port = self.httpd.server_address[1]
        self._stopping = threading.Event()

    def serve(self) -> None:
        try:
            self.httpd.serve_forever(poll_interval=0.2)
        finally:
            self.engine_api.close()
            self.engine.close()
            self.httpd.server_close()

    def stop(self, reason: str) -> None:
        """Idempotent; safe from a signal handler or a request thread (shutdown() runs on its own thread,
        because it waits for serve_forever, which may be running on the caller's thread)."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        log(f"atk_trainer shutting down: {reason}")
        threading.Thread(target=self.httpd.shutdown, name="atk-shutdown", daemon=True).start()

    def dispatch(self, method: str, path: str, raw: bytes) -> Tuple[int, Reply]:
        """(status, body) for one request; body None = empty, str = text/plain, else JSON."""
        handler = self.routes.get((method, path))
        if handler is None:
            allowed = [m for (m, p) in self.routes if p == path]
            if allowed:
                raise HttpError(405, f"{method} {path}: use {' or '.join(allowed)}", "MethodNotAllowedError")
            raise HttpError(404, f"{method} {path}: no such route", "NotFoundError")
        body: Body = None
        if raw.strip():
            try:
                body = json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise HttpError(400, f"request body is not JSON: {e}") from None
        elif method == "POST":
            body = {}
        return 200, handler(body)


class _HttpServer(ThreadingHTTPServer):
    request_queue_size = 1024  # listen backlog; the default 5 resets connections when many episodes call at once
    daemon_threads = True


def _handler_class(app: TrainerServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the engine client sends many small requests
        server_version = "atk_trainer"

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            self._serve("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._serve("POST")

        def _serve(self, method: str) -> None:
            path = self.path.split("?", 1)[0].rstrip("/") or "/"
            start = time.perf_counter()
            try:
                length = int(self.headers.get("Content-Length") or 0)
                if not authorized(self.headers, app.token):
                    if 0 < length <= MAX_BODY:
                        self.rfile.read(length)  # drain it: the keep-alive connection's next request starts after it
                    raise HttpError(401, "missing or wrong run token (Authorization: Bearer)", "AuthenticationError")
                if length > MAX_BODY:
                    raise HttpError(
                        413, f"request body of {length} bytes is over the {MAX_BODY} limit", "RequestTooLargeError"
                    )
                status, body = app.dispatch(method, path, self.rfile.read(length) if length else b"")
            except HttpError as e:
                status, body = e.status, _error_body(path, e.status, e.message, e.kind, None)
            except Exception as e:  # noqa: BLE001 - report the failure, keep serving
                trace = traceback.format_exc()
                sys.stderr.write(trace)
                line = traceback.format_exception_only(type(e), e)[-1].strip()
                status, body = 500, _error_body(path, 500, line, "InternalServerError", trace)
            self._reply(status, body)
            if (method, path) == ("POST", "/control/shutdown") and status == 200:
                app.stop("POST /control/shutdown")  # after the reply is written: the process may end any moment now
            if path.startswith("/control/") or status >= 400:
                log(f"{method} {path} -> {status} in {time.perf_counter() - start:.3f} s")

        def _reply(self, status: int, body: Any) -> None:
            if body is None:
                data, kind = b"", "application/json"
            elif isinstance(body, str):
                data, kind = body.encode(), "text/plain; charset=utf-8"
            else:
                data, kind = json.dumps(body).encode(), "application/json"
            try:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout, abort); nothing to tell it

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass  # one line per control call and per error, from _serve; completions would flood the log

    return Handler


def _error_body(path: str, status: int, message: str, kind: str, trace: Optional[str]) -> Dict[str, Any]:
    if path.startswith("/control/"):
        return {"error": message, "traceback": trace}
    return {"error": {"message": message, "type": kind, "code": status}}


def watch_parent(parent_pid: Optional[int], stop: Callable[[str], None]) -> None:
    """Call stop() once the parent is gone: `parent_pid` no longer exists, or we were re-parented."""
    original = os.getppid()

    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def poll() -> None:
        while True:
            time.sleep(PARENT_POLL_S)
            if os.getppid() != original or (parent_pid is not None and not alive(parent_pid)):
                stop("parent process exited")
                return

    threading.Thread(target=poll, name="atk-parent-watch", daemon=True).start()
