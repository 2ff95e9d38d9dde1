"""Reading request bodies with a size limit, and the small JSON bodies of the repository API."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from starlette.requests import ClientDisconnect

from app.errors import ClientDisconnectedError, PayloadTooLargeError, UnprocessableError
from app.http.json_limits import load_json

__all__ = ["check_declared_length", "read_body", "read_json_object", "too_large"]


def check_declared_length(
    declared: str | None, limit: int, variable: str = "MININN_MAX_REQUEST_BYTES"
) -> None:
    """Refuse a body whose ``Content-Length`` is over ``limit`` before anything is read.

    Raises:
        PayloadTooLargeError: over ``limit`` (413), naming the setting that raises it.
    """
    if declared and declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLargeError(
            f"request body of {declared} bytes is over the {limit}-byte limit ({variable})"
        )


def too_large(limit: int, variable: str = "MININN_MAX_REQUEST_BYTES") -> PayloadTooLargeError:
    """The 413 for a body found over ``limit`` while reading it."""
    return PayloadTooLargeError(f"request body is over the {limit}-byte limit ({variable})")


async def read_body(request: Request, limit: int, variable: str = "MININN_MAX_REQUEST_BYTES") -> bytes:
    """The raw body, refused with 413 as soon as it passes ``limit`` bytes.

    ``Content-Length`` gives an early refusal before anything is read.

    Raises:
        PayloadTooLargeError: over ``limit`` (413).
        ClientDisconnectedError: the client hung up before the body's end (499, never delivered).
    """
    check_declared_length(request.headers.get("content-length"), limit, variable)
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise too_large(limit, variable)
            chunks.append(chunk)
    except ClientDisconnect:
        raise ClientDisconnectedError(
            f"the client disconnected after sending {size} bytes of the request body"
        ) from None
    return b"".join(chunks)


async def read_json_object(request: Request, limit: int = 1 << 20) -> dict[str, Any]:
    """A JSON object body; an empty body is ``{}`` (tritonclient sends none on some endpoints).

    Raises:
        BadRequestError: not JSON.
        UnprocessableError: JSON, but not an object.
    """
    body = await read_body(request, limit)
    if not body.strip():
        return {}
    document = load_json(body, "request body")
    if not isinstance(document, dict):
        raise UnprocessableError("request body must be a JSON object")
    return document
