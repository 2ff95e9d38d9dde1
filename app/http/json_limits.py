"""JSON from clients, parsed with a nesting limit.

CPython's JSON decoder recurses once per level of nesting and raises
``RecursionError`` near the interpreter's recursion limit (about a thousand
levels), and code that later walks a document (pydantic's serializer,
FastAPI's encoder, ``json.dumps``) recurses too, some of it with smaller
limits of its own. Either would turn a few kilobytes of ``[[[[...`` into a
500. :func:`parse_json` refuses documents nested deeper than
:data:`MAX_JSON_DEPTH` levels with a 400 instead; V2 requests need about ten
(a tensor's nested ``data`` one per dimension).

Inference requests (``exact_integers=False``) are parsed by orjson, several
times faster than the standard library on the long number lists of a V2
request (figures in docs/performance.md). What orjson refuses and the standard
library reads (``NaN`` and ``Infinity``, which Triton's parser accepts too,
UTF-16 or UTF-32 text, nesting past orjson's own limit) is parsed again by
``json.loads``, so the accepted language and the error messages stay those of
``json``. One difference remains: orjson reads an integer past the 64-bit
range as a float, as Triton's parser does; such a value is out of range for
every integer datatype anyway. Other documents (``model.json``, which the
server stores) keep ``json.loads``'s exact integers.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from app.errors import BadRequestError

__all__ = ["MAX_JSON_DEPTH", "load_json", "parse_json"]

MAX_JSON_DEPTH = 64
"""The deepest nesting of arrays and objects accepted in a request's JSON."""


def parse_json(text: str | bytes, what: str, *, exact_integers: bool = True) -> Any:
    """``json.loads(text)``, refused when nested more than :data:`MAX_JSON_DEPTH` levels.

    Args:
        text: the JSON text from the client.
        what: how the message names it, e.g. ``"request body"``.
        exact_integers: False: parse with orjson (fast; integers past 64 bits
            become floats), falling back to ``json.loads`` for what orjson refuses.

    Raises:
        json.JSONDecodeError: not JSON (callers word their own 400 or 422).
        UnicodeDecodeError: bytes that are not UTF-8, -16 or -32.
        BadRequestError: nested more than :data:`MAX_JSON_DEPTH` levels (400).
    """
    if exact_integers:
        document = _parse_with_json(text, what)
    else:
        try:
            document = orjson.loads(text)
        except orjson.JSONDecodeError:
            document = _parse_with_json(text, what)
    if _openings(text) > MAX_JSON_DEPTH and _deeper_than(document, MAX_JSON_DEPTH):
        raise _too_deep(what)
    return document


def load_json(text: str | bytes, what: str) -> Any:
    """:func:`parse_json` for callers whose client sent the text: what is not JSON is a 400 naming ``what``.

    Raises:
        BadRequestError: not JSON, not UTF-8/16/32, or nested too deep.
    """
    try:
        return parse_json(text, what)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequestError(f"{what} is not valid JSON: {exc}") from None


def _openings(text: str | bytes) -> int:
    """How many ``[`` and ``{`` ``text`` holds: a bound on its nesting, counted at C speed.

    Most requests hold fewer than :data:`MAX_JSON_DEPTH` and skip the walk of
    :func:`_deeper_than`, which looks at every member (13 us for 784 numbers).
    """
    if isinstance(text, str):
        return text.count("[") + text.count("{")
    return text.count(b"[") + text.count(b"{")


def _parse_with_json(text: str | bytes, what: str) -> Any:
    """``json.loads(text)``, with too deep a nesting refused (400)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise _too_deep(what) from None


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
