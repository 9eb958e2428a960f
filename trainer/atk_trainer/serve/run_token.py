"""The per-run token that guards a server listening off loopback (a trainer or engine on another node).

atk sets ATK_RUN_TOKEN (random, per run) in the environment of every process it places on a cluster and
sends `Authorization: Bearer <token>` with every request, as vLLM's own --api-key expects. A server
bound to a non-loopback address refuses to start without the token; with it, it answers 401 to any
request without it.
"""
from __future__ import annotations

import hmac
import ipaddress
import os
import socket
from typing import Mapping, Optional

TOKEN_ENV = "ATK_RUN_TOKEN"


def required_token(host: str) -> Optional[str]:
    """The token requests must carry, or None (loopback without a token: atk's local runs).

    Raises SystemExit with a one-line reason when `host` is off loopback and no token is set."""
    token = os.environ.get(TOKEN_ENV) or None
    if token is None and not is_loopback(host):
        raise SystemExit(
            f"atk_trainer: refusing to listen on {host} without a run token: "
            f"set {TOKEN_ENV} (atk does for cluster launchers)"
        )
    return token


def is_loopback(host: str) -> bool:
    """True when every address `host` resolves to is a loopback one."""
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


def authorized(headers: Mapping[str, str], token: Optional[str]) -> bool:
    """True when no token is required or `Authorization: Bearer <token>` carries it (constant-time compare)."""
    if token is None:
        return True
    given = headers.get("Authorization") or ""
    return given.startswith("Bearer ") and hmac.compare_digest(given[len("Bearer ") :].encode(), token.encode())
