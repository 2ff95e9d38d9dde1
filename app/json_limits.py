"""JSON from clients, parsed with a nesting limit.

CPython's JSON decoder recurses once per level of nesting and raises
``RecursionError`` near the interpreter's recursion limit (about a thousand
levels), and code that later walks a document (pydantic's serializer,
FastAPI's encoder, ``json.dumps``) recurses too, some of it with smaller
limits of its own. Either would turn a few kilobytes of ``[[[[...`` into a
500. :func:`parse_json` refuses documents nested deeper than
:data:`MAX_JSON_DEPTH` levels with a 400 instead; V2 requests need about ten
(a tensor's nested ``data`` one per dimension).
"""

from __future__ import annotations

import json
from typing import Any

from app.errors import BadRequestError

__all__ = ["MAX_JSON_DEPTH", "parse_json"]

MAX_JSON_DEPTH = 64
"""The deepest nesting of arrays and objects accepted in a request's JSON."""


def parse_json(text: str | bytes, what: str) -> Any:
    """``json.loads(text)``, refused when nested more than :data:`MAX_JSON_DEPTH` levels.

    Args:
        text: the JSON text from the client.
        what: how the message names it, e.g. ``"request body"``.

    Raises:
        json.JSONDecodeError: not JSON (callers word their own 400 or 422).
        UnicodeDecodeError: bytes that are not UTF-8, -16 or -32.
        BadRequestError: nested more than :data:`MAX_JSON_DEPTH` levels (400).
    """
    try:
        document = json.loads(text)
    except RecursionError:
        raise _too_deep(what) from None
    if _deeper_than(document, MAX_JSON_DEPTH):
        raise _too_deep(what)
    return document


def _too_deep(what: str) -> BadRequestError:
    return BadRequestError(f"{what} nests JSON arrays and objects more than {MAX_JSON_DEPTH} levels deep")


def _deeper_than(document: Any, limit: int) -> bool:
    """Whether ``document`` nests more than ``limit`` levels, walked level by level (no recursion).

    ``set(map(type, ...))`` looks at a container's members at C speed, so a
    flat list of a million numbers costs one pass and no Python loop.
    """
    level = [document] if isinstance(document, (list, dict)) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below = []
        for container in level:
            members = container.values() if isinstance(container, dict) else container
            kinds = set(map(type, members))
            if list in kinds or dict in kinds:
                below.extend(m for m in members if type(m) is list or type(m) is dict)
        level = below
    return False
