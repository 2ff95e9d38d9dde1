"""Bearer-key checks: ``MININN_API_KEY`` for writes, ``MININN_READ_API_KEY`` for reads.

Write endpoints (``PUT`` model.json, ``PUT`` state_dict, ``DELETE`` a version,
load, unload) accept only the write key, and are closed (403, saying how to
open them) while no write key is configured: a server started without one
still serves, but nobody can change it. Reads are open unless a read key is
configured; then they accept the read key or the write key. Keys are compared
in constant time (``hmac.compare_digest``, every key tried). A missing or
non-Bearer ``Authorization`` header is 401 with ``WWW-Authenticate: Bearer``; a
wrong key is 403. Health endpoints are always open, so probes need no secret.

The checks are ``async`` on purpose: FastAPI runs plain ``def`` dependencies on a
thread pool, which would cost every request a thread hop.
"""

from __future__ import annotations

import hmac

from fastapi import Request
from pydantic import SecretStr

from app.errors import ForbiddenError, UnauthorizedError

__all__ = ["WRITES_DISABLED", "require_read", "require_write"]

WRITES_DISABLED = (
    "write endpoints are disabled because no write key is configured: start the server with "
    "MININN_API_KEY=<key> and send 'Authorization: Bearer <key>'"
)


async def require_write(request: Request) -> None:
    """Dependency of write endpoints.

    Raises:
        ForbiddenError: no write key is configured (403), or the key sent is not it (403).
        UnauthorizedError: no bearer key was sent (401).
    """
    settings = request.app.state.service.settings
    if settings.api_key is None:
        raise ForbiddenError(WRITES_DISABLED)
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
