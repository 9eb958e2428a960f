"""The one exception a handler raises to answer with an HTTP error instead of a 500."""
from __future__ import annotations

from typing import Dict


class HttpError(Exception):
    """`status` with a one-line `message`; `kind` is the vLLM/OpenAI error type (BadRequestError, ...)."""

    def __init__(self, status: int, message: str, kind: str = "BadRequestError"):
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


def bad_request(message: str) -> HttpError:
    return HttpError(400, message, "BadRequestError")


def expect_object(body: object) -> Dict[str, object]:
    """The parsed JSON body as a dict, or a 400."""
    if not isinstance(body, dict):
        raise bad_request(f"expected a JSON object, got {type(body).__name__}")
    return body
