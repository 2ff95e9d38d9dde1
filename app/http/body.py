"""Reading request bodies with a size limit, and the small JSON bodies of the repository API."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from starlette.requests import ClientDisconnect

from app.errors import ClientDisconnectedError, PayloadTooLargeError, UnprocessableError
from app.http.json_limits import load_json

__all__ = ["read_body", "read_json_object"]


async def read_body(request: Request, limit: int, variable: str = "MININN_MAX_REQUEST_BYTES") -> bytes:
    """The raw body, refused with 413 as soon as it passes ``limit`` bytes.

    ``Content-Length`` gives an early refusal before anything is read.

    Raises:
        PayloadTooLargeError: over ``limit`` (413).
        ClientDisconnectedError: the client hung up before the body's end (499, never delivered).
    """
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLargeError(
            f"request body of {declared} bytes is over the {limit}-byte limit ({variable})"
        )
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise PayloadTooLargeError(f"request body is over the {limit}-byte limit ({variable})")
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
