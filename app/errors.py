"""Service errors and the one place that turns them into HTTP responses.

Every error a client can cause is a :class:`ServiceError` that carries its
HTTP status; routes raise them and :func:`install_error_handlers` renders each
as ``{"error": "<message>"}``::

    ServiceError                       500  (base; never raised for bad input)
    +-- BadRequestError                400  malformed body, header, name or query
    +-- UnauthorizedError              401  a key is configured and none was sent
    +-- ForbiddenError                 403  the key sent is not the configured one
    +-- NotFoundError                  404  unknown model, version or route
    +-- RequestTimeoutError            408  the body did not arrive within MININN_BODY_TIMEOUT_S
    +-- ConflictError                  409  the request clashes with the current state
    +-- PayloadTooLargeError           413  body over MININN_MAX_REQUEST_BYTES
    +-- UnsupportedMediaTypeError      415  unknown Content-Encoding
    +-- UnprocessableError             422  well-formed, but wrong shapes, dtypes or names
    +-- TooManyRequestsError           429  (with Retry-After)
    +-- ServiceUnavailableError        503  model not ready or queue full (with Retry-After)
    +-- GatewayTimeoutError            504  the request's deadline passed (work not started is dropped)
    +-- ClientDisconnectedError        499  the client left while its request waited (nobody reads it)

FastAPI's own validation errors and Starlette's HTTP exceptions (unknown
route, wrong method) get the same ``{"error": ...}`` shape, which is the only
error shape ``tritonclient`` understands. Paths of another protocol answer in
that protocol's shape: :func:`install_error_handlers` takes an
:class:`ErrorRenderer` per path prefix (the OpenAI routes under ``/v1`` and
``/openai/v1`` render ``{"error": {"message", "type", "param", "code"}}``). An unexpected exception becomes a
500 whose body names the request id and nothing of the stack
(:mod:`app.http.middleware`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.log import request_id_var

__all__ = [
    "BadRequestError",
    "ClientDisconnectedError",
    "ConflictError",
    "ErrorBody",
    "ErrorRenderer",
    "ForbiddenError",
    "GatewayTimeoutError",
    "NotFoundError",
    "PayloadTooLargeError",
    "RequestTimeoutError",
    "ServiceError",
    "ServiceUnavailableError",
    "TooManyRequestsError",
    "UnauthorizedError",
    "UnprocessableError",
    "UnsupportedMediaTypeError",
    "error_response",
    "error_responses",
    "install_error_handlers",
    "loggable",
    "render_service_error",
    "unknown_model_error",
]

logger = logging.getLogger("app.errors")


class ServiceError(Exception):
    """An error with the HTTP status and headers its response carries.

    Args:
        message: what went wrong, naming the value, key or shape involved.
        headers: extra response headers (``Retry-After``, ``WWW-Authenticate``).
        details: extra JSON fields of the body beside ``error`` (e.g. ``missing_keys``).
    """

    status_code: int = 500
    log_level: int | None = None  # the handler's log level for it; None: WARNING for 5xx, INFO for 4xx

    def __init__(
        self,
        message: str,
        *,
        headers: Mapping[str, str] | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.headers = dict(headers or {})
        self.details = dict(details or {})


class BadRequestError(ServiceError):
    """The request cannot be parsed: bad JSON, header, name or query value."""

    status_code = 400


class UnauthorizedError(ServiceError):
    """A key is required and the request sent none."""

    status_code = 401

    def __init__(self, message: str) -> None:
        super().__init__(message, headers={"WWW-Authenticate": "Bearer"})


class ForbiddenError(ServiceError):
    """The request sent a key that is not accepted here."""

    status_code = 403


class NotFoundError(ServiceError):
    """Unknown model, model version or route."""

    status_code = 404


def unknown_model_error(name: str, available: Sequence[str]) -> NotFoundError:
    """404 for a model the server does not know, in Triton's words, then the models it has.

    Triton's clients and examples look for ``Request for unknown model: '<m>' is not found``.
    """
    if available:
        listed = ", ".join(available[:20]) + (", ..." if len(available) > 20 else "")
        listing = f"; available models: {listed}"
    else:
        listing = "; the repository is empty"
    return NotFoundError(f"Request for unknown model: '{name}' is not found{listing}")


class RequestTimeoutError(ServiceError):
    """The request body did not arrive in time; the connection is closed after the answer."""

    status_code = 408

    def __init__(self, message: str) -> None:
        super().__init__(message, headers={"Connection": "close"})


class ConflictError(ServiceError):
    """The request clashes with the current state (e.g. a load already running)."""

    status_code = 409


class PayloadTooLargeError(ServiceError):
    """The request body (or its decompressed form) is over the configured limit."""

    status_code = 413


class UnsupportedMediaTypeError(ServiceError):
    """The request body uses an encoding this server cannot decode."""

    status_code = 415


class UnprocessableError(ServiceError):
    """Well-formed, but the tensors, names or keys do not fit the model."""

    status_code = 422


class TooManyRequestsError(ServiceError):
    """The client should slow down; ``Retry-After`` says for how long."""

    status_code = 429

    def __init__(self, message: str, *, retry_after: int = 1) -> None:
        super().__init__(message, headers={"Retry-After": str(retry_after)})


class ServiceUnavailableError(ServiceError):
    """The model is not ready or overloaded; ``Retry-After`` says when to retry."""

    status_code = 503

    def __init__(self, message: str, *, retry_after: int | None = 1) -> None:
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        super().__init__(message, headers=headers)


class GatewayTimeoutError(ServiceError):
    """The request's deadline (``timeout`` parameter or MININN_REQUEST_TIMEOUT_MS) passed."""

    status_code = 504


class ClientDisconnectedError(ServiceError):
    """The client disconnected before its answer was ready (nginx's 499; never delivered)."""

    status_code = 499


class ErrorBody(BaseModel):
    """The body of every error response; some add fields (an upload's ``missing_keys``)."""

    model_config = ConfigDict(extra="allow")

    error: str


_DESCRIPTIONS = {
    400: "malformed body, header, name, version or query value",
    401: "a key is configured and no bearer key was sent (WWW-Authenticate: Bearer)",
    403: "the bearer key is not accepted here, or writes are closed (no MININN_API_KEY)",
    404: "unknown model or version",
    408: "the body did not arrive within MININN_BODY_TIMEOUT_S (the connection is closed)",
    409: "the request clashes with the current state",
    413: "body over its limit (MININN_MAX_REQUEST_BYTES, MININN_MAX_UPLOAD_BYTES, captures)",
    415: "Content-Encoding other than gzip, deflate or identity",
    422: "well-formed, but the names, shapes, datatypes or keys do not fit",
    503: "not ready (loading, unloaded, failed) or its queue is full (Retry-After)",
    504: "the request's timeout passed before it ran",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for error ``codes``, each with the :class:`ErrorBody` schema."""
    return {code: {"model": ErrorBody, "description": _DESCRIPTIONS[code]} for code in codes}


def error_response(
    status_code: int,
    message: str,
    headers: Mapping[str, str] | None = None,
    details: Mapping[str, Any] | None = None,
) -> JSONResponse:
    """The ``{"error": message, **details}`` response every failure uses."""
    body = {"error": message, **(details or {})}
    return JSONResponse(body, status_code=status_code, headers=dict(headers or {}))


class ErrorRenderer(Protocol):
    """Builds the response of an error in one protocol's shape."""

    def __call__(
        self,
        status_code: int,
        message: str,
        headers: Mapping[str, str] | None = None,
        details: Mapping[str, Any] | None = None,
        *,
        param: str | None = None,
    ) -> Response:
        """The response for ``status_code`` and ``message``; ``param`` names the request field at fault."""
        ...


def _v2_error(
    status_code: int,
    message: str,
    headers: Mapping[str, str] | None = None,
    details: Mapping[str, Any] | None = None,
    *,
    param: str | None = None,
) -> Response:
    return error_response(status_code, message, headers, details)


def install_error_handlers(app: FastAPI, dialects: Mapping[str, ErrorRenderer] | None = None) -> None:
    """Render every error raised while handling a request as ``{"error": ...}``.

    Args:
        app: the application.
        dialects: a renderer per path prefix (``"/v1"`` covers ``/v1`` and ``/v1/...``) for the
            routes of another protocol; the longest matching prefix wins.
    """
    ordered = sorted((dialects or {}).items(), key=lambda item: -len(item[0]))
    app.state.error_dialects = [(prefix.rstrip("/"), render) for prefix, render in ordered]
    app.add_exception_handler(ServiceError, _service_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_exception)


def _renderer(request: Request) -> ErrorRenderer:
    path = request.url.path
    for prefix, render in getattr(request.app.state, "error_dialects", ()):
        if path == prefix or path.startswith(prefix + "/"):
            return render
    return _v2_error


async def _service_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ServiceError)
    return render_service_error(request, exc)


def render_service_error(request: Request, exc: ServiceError) -> Response:
    """Log ``exc`` as a client error and render it with its status and headers (V2: ``{"error": ...}``)."""
    _log_client_error(request, exc.status_code, exc.message, exc.log_level)
    return _renderer(request)(exc.status_code, exc.message, exc.headers, exc.details)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    status = 400 if all(_is_malformed(e) for e in errors) else 422
    message = "; ".join(_describe_validation_error(e) for e in errors) or "invalid request"
    _log_client_error(request, status, message)
    param = ".".join(str(part) for part in errors[0].get("loc", ())[1:]) if errors else ""
    return _renderer(request)(status, message, param=param or None)


async def _http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 404:
        message = f"no route for {request.method} {request.url.path}; see /docs for the API"
    elif exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow") or (exc.headers or {}).get("allow") or ""
        message = f"method {request.method} is not allowed on {request.url.path}"
        message += f"; allowed: {allowed}" if allowed else ""
    else:
        message = str(exc.detail)
    _log_client_error(request, exc.status_code, message)
    return _renderer(request)(exc.status_code, message, exc.headers)


def _is_malformed(error: Mapping[str, Any]) -> bool:
    loc = error.get("loc") or ()
    return error.get("type") == "json_invalid" or (bool(loc) and loc[0] in ("query", "path", "header"))


def _describe_validation_error(error: Mapping[str, Any]) -> str:
    loc: Sequence[Any] = error.get("loc") or ()
    message = str(error.get("msg", "invalid value"))
    if not loc:
        return message
    where, *rest = loc
    if where == "body":
        key = ".".join(str(part) for part in rest)
        return f"body{'.' + key if key else ''}: {message}"
    name = ".".join(str(part) for part in rest)
    return f"{where} parameter '{name}': {message}"


def loggable(text: str) -> str:
    """``text`` with control characters escaped, so a client's value cannot forge a log line."""
    return text if text.isprintable() else repr(text)[1:-1]


def _log_client_error(request: Request, status: int, message: str, log_level: int | None = None) -> None:
    model = loggable(str(request.path_params.get("model_name", "-")))
    if request.url.path.startswith("/v2/health/"):
        level = logging.DEBUG  # probes poll readiness; a 503 while loading is expected
    else:
        level = logging.WARNING if status >= 500 else logging.INFO
    level = level if log_level is None else log_level
    logger.log(
        level,
        "request %s: %s %s model=%s -> %d %s",
        request_id_var.get(),
        request.method,
        loggable(request.url.path),
        model,
        status,
        loggable(message),
    )
