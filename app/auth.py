"""Bearer-key checks: ``MININN_API_KEY`` for writes, ``MININN_READ_API_KEY`` for reads.

With no key configured an endpoint is open. Writes (load, unload, uploads)
accept only the write key; reads accept the read key or the write key. Keys
are compared in constant time. Health endpoints are always open, so probes
need no secret.

The checks are ``async`` on purpose: FastAPI runs plain ``def`` dependencies on a
thread pool, which would cost every request a thread hop.
"""

from __future__ import annotations

import hmac

from fastapi import Request
from pydantic import SecretStr

from app.errors import ForbiddenError, UnauthorizedError

__all__ = ["require_read", "require_write"]


async def require_write(request: Request) -> None:
    """Dependency of write endpoints.

    Raises:
        UnauthorizedError: a write key is configured and no bearer key was sent (401).
        ForbiddenError: the key sent is not the write key (403).
    """
    settings = request.app.state.service.settings
    _check(request, [settings.api_key], "MININN_API_KEY", "write")


async def require_read(request: Request) -> None:
    """Dependency of read endpoints: the read key or the write key when a read key is set.

    Raises:
        UnauthorizedError: no bearer key was sent (401).
        ForbiddenError: the key sent is neither key (403).
    """
    settings = request.app.state.service.settings
    if settings.read_api_key is not None:
        _check(request, [settings.read_api_key, settings.api_key], "MININN_READ_API_KEY", "read")


def _check(request: Request, keys: list[SecretStr | None], variable: str, kind: str) -> None:
    accepted = [k.get_secret_value().encode() for k in keys if k is not None]
    if not accepted:
        return
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise UnauthorizedError(
            f"this {kind} endpoint needs 'Authorization: Bearer <key>' ({variable} is set)"
        )
    sent = token.strip().encode()
    matches = [hmac.compare_digest(sent, key) for key in accepted]  # no early exit: constant time
    if not any(matches):
        raise ForbiddenError(f"the bearer key is not valid for this {kind} endpoint")
