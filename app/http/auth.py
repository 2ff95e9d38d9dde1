"""The bearer-key checks (:mod:`app.auth`) as FastAPI dependencies, on the ``Authorization`` header.

The checks are ``async`` on purpose: FastAPI runs plain ``def`` dependencies on a
thread pool, which would cost every request a thread hop.
"""

from __future__ import annotations

from fastapi import Request

from app.auth import WRITES_DISABLED, check_read, check_write

__all__ = ["WRITES_DISABLED", "require_read", "require_write"]


async def require_write(request: Request) -> None:
    """Dependency of write endpoints (:func:`app.auth.check_write`).

    Raises:
        ForbiddenError: no write key is configured (403), or the key sent is not it (403).
        UnauthorizedError: no bearer key was sent (401).
    """
    check_write(request.app.state.service.settings, request.headers.get("authorization"))


async def require_read(request: Request) -> None:
    """Dependency of read endpoints (:func:`app.auth.check_read`).

    Raises:
        UnauthorizedError: no bearer key was sent (401).
        ForbiddenError: the key sent is neither key (403).
    """
    check_read(request.app.state.service.settings, request.headers.get("authorization"))
