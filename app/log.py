"""Logging: the request id of the request being served, and the log format.

``request_id_var`` holds the ``X-Request-ID`` of the request in progress (set
by the request middleware, copied into inference threads); every record of
the ``app``, ``models`` and ``mininn`` loggers prints it.

Lines read ``LEVEL: logger [request id] message``. uvicorn's own messages
(start-up, shutdown, crashes) come from its logger ``uvicorn.error`` whatever
their level, so they are shown as ``uvicorn``.
"""

from __future__ import annotations

import contextvars
import logging
import os
import re
from typing import Any

__all__ = ["LoggerNameFilter", "RequestIdFilter", "logging_config", "request_id_for", "request_id_var"]

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:/+=-]{1,128}")


def request_id_for(sent: str | None) -> str:
    """The id of a request: the one the client ``sent`` (``X-Request-ID`` over HTTP, ``x-request-id``
    metadata over gRPC) when it is 1-128 of ``A-Za-z0-9._:/+=-``, else a new one (32 hex digits)."""
    if sent is not None and _REQUEST_ID.fullmatch(sent):
        return sent
    return os.urandom(16).hex()  # like uuid4().hex, at a quarter of its cost


_SHOWN_NAMES = {"uvicorn.error": "uvicorn"}


class RequestIdFilter(logging.Filter):
    """Adds ``record.request_id`` (``-`` outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        return True


class LoggerNameFilter(logging.Filter):
    """Adds ``record.logger``: the logger's name, ``uvicorn`` for ``uvicorn.error``."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.logger = _SHOWN_NAMES.get(record.name, record.name)
        return True


def logging_config(level: str) -> dict[str, Any]:
    """uvicorn's ``log_config``: its own loggers plus ours, all at ``level``."""
    level = level.upper()
    if level == "TRACE":
        level = "DEBUG"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "request_id": {"()": "app.log.RequestIdFilter"},
            "logger_name": {"()": "app.log.LoggerNameFilter"},
        },
        "formatters": {
            "default": {
                "()": "uvicorn.logging.DefaultFormatter",
                "fmt": "%(levelprefix)s %(logger)s [%(request_id)s] %(message)s",
                "use_colors": None,
            },
            "access": {
                "()": "uvicorn.logging.AccessFormatter",
                "fmt": '%(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s',
                "use_colors": None,
            },
        },
        "handlers": {
            "default": {
                "formatter": "default",
                "filters": ["request_id", "logger_name"],
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
            },
            "access": {
                "formatter": "access",
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stdout",
            },
        },
        "loggers": {
            "uvicorn": {"handlers": ["default"], "level": level, "propagate": False},
            "uvicorn.error": {"level": level},
            "uvicorn.access": {"handlers": ["access"], "level": level, "propagate": False},
            "app": {"handlers": ["default"], "level": level, "propagate": False},
            "models": {"handlers": ["default"], "level": level, "propagate": False},
            "mininn": {"handlers": ["default"], "level": level, "propagate": False},
        },
    }
