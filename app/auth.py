"""Bearer keys: ``MININN_API_KEY`` for writes, ``MININN_READ_API_KEY`` for reads, for every transport.

Write endpoints (``PUT`` model.json, ``PUT`` state_dict, ``DELETE`` a version,
load, unload) accept only the write key, and are closed (403, saying how to
open them) while no write key is configured: a server started without one
still serves, but nobody can change it. Reads are open unless a read key is
configured; then they accept the read key or the write key. Keys are compared
in constant time (``hmac.compare_digest``, every key tried). A missing or
non-Bearer ``authorization`` value is 401 (``WWW-Authenticate: Bearer`` over
HTTP); a wrong key is 403. Health endpoints are always open, so probes need no
secret.

The HTTP dependencies (:mod:`app.http.auth`) pass the ``Authorization``
header here, the gRPC servicer (:mod:`app.grpc`) its ``authorization``
metadata.
"""

from __future__ import annotations

import hmac

from pydantic import SecretStr

from app.errors import ForbiddenError, UnauthorizedError
from app.settings import Settings

__all__ = ["WRITES_DISABLED", "check_read", "check_write"]

WRITES_DISABLED = (
    "write endpoints are disabled because no write key is configured: start the server with "
    "MININN_API_KEY=<key> and send 'Authorization: Bearer <key>'"
)


def check_write(settings: Settings, authorization: str | None) -> None:
    """Let a write through when ``authorization`` (``"Bearer <key>"``) holds the write key.

    Raises:
        ForbiddenError: no write key is configured (403), or the key sent is not it (403).
        UnauthorizedError: no bearer key was sent (401).
    """
    if settings.api_key is None:
        raise ForbiddenError(WRITES_DISABLED)
    _check(authorization, [settings.api_key], "MININN_API_KEY", "write")


def check_read(settings: Settings, authorization: str | None) -> None:
    """Let a read through: always without a read key, else with the read key or the write key.

    Raises:
        UnauthorizedError: no bearer key was sent (401).
        ForbiddenError: the key sent is neither key (403).
    """
    if settings.read_api_key is not None:
        _check(authorization, [settings.read_api_key, settings.api_key], "MININN_READ_API_KEY", "read")


def _check(authorization: str | None, keys: list[SecretStr | None], variable: str, kind: str) -> None:
    accepted = [k.get_secret_value().encode() for k in keys if k is not None]
    if not accepted:
        return
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise UnauthorizedError(
            f"this {kind} endpoint needs 'Authorization: Bearer <key>' ({variable} is set)"
        )
    sent = token.strip().encode()
    matches = [hmac.compare_digest(sent, key) for key in accepted]  # no early exit: constant time
    if not any(matches):
        raise ForbiddenError(f"the bearer key is not valid for this {kind} endpoint")
