"""OpenAI's error body, ``{"error": {"message", "type", "param", "code"}}``, for the OpenAI routes.

The service's errors (:mod:`app.errors`) keep their status and message; this
module only gives them OpenAI's shape, with a ``type`` and ``code`` from the
status (OpenAI's own names where it has them):

====== ======================= ========================
status type                    code
====== ======================= ========================
400    invalid_request_error   null (``context_length_exceeded`` for prompts too long)
401    authentication_error    ``invalid_api_key``
403    permission_error        null
404    invalid_request_error   ``model_not_found`` (an unknown or non-text model), else null
408    timeout_error           null
413    invalid_request_error   ``request_too_large``
429    rate_limit_error        ``rate_limit_exceeded``
5xx    server_error            ``service_unavailable`` for 503, else null
====== ======================= ========================

A 422 (a well-formed request the model cannot take) is answered as 400, as
OpenAI and vLLM do for every invalid request: the ``openai`` client raises
``BadRequestError`` for it. Other 4xx keep their status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict

from app.http.sse import sse_frame

__all__ = ["OpenAIError", "OpenAIErrorBody", "openai_error", "openai_error_frame", "openai_error_response"]

_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    408: "timeout_error",
    429: "rate_limit_error",
}
_CODES = {
    401: "invalid_api_key",
    404: "model_not_found",
    413: "request_too_large",
    429: "rate_limit_exceeded",
    503: "service_unavailable",
}


class OpenAIError(BaseModel):
    """What went wrong: the message the service gives, and OpenAI's classification of it."""

    model_config = ConfigDict(extra="forbid")

    message: str
    type: str
    param: str | None = None
    code: str | None = None


class OpenAIErrorBody(BaseModel):
    """The body of every error on the OpenAI routes."""

    error: OpenAIError


def openai_status(status_code: int) -> int:
    """The status an error answers with on the OpenAI routes (422 becomes 400)."""
    return 400 if status_code == 422 else status_code


def openai_error(status_code: int, message: str, *, param: str | None = None) -> dict[str, Any]:
    """The ``error`` object of an error with HTTP status ``status_code``."""
    status = openai_status(status_code)
    kind = "server_error" if status >= 500 else _TYPES.get(status, "invalid_request_error")
    code = _CODES.get(status)
    if status == 404 and "model" not in message:
        code = None
    if status == 400 and "context" in message and "tokens" in message:
        code = "context_length_exceeded"
    return {"message": message, "type": kind, "param": param, "code": code}


def openai_error_response(
    status_code: int,
    message: str,
    headers: Mapping[str, str] | None = None,
    details: Mapping[str, Any] | None = None,
    *,
    param: str | None = None,
) -> Response:
    """The response of an error on the OpenAI routes (an :class:`app.errors.ErrorRenderer`).

    ``details`` (extra fields of the V2 body) are left out: OpenAI's body has none; a
    ``param`` among them names the request field at fault.
    """
    param = param if param is not None else (details or {}).get("param")
    body = {"error": openai_error(status_code, message, param=param)}
    return JSONResponse(body, status_code=openai_status(status_code), headers=dict(headers or {}))


def openai_error_frame(status_code: int, message: str) -> bytes:
    """A server-sent event carrying an error after a stream has started (the client raises it)."""
    return sse_frame({"error": openai_error(status_code, message)})
