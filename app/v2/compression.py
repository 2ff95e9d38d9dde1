"""HTTP body compression: ``Content-Encoding`` in, ``Accept-Encoding`` out.

``tritonclient`` compresses the whole request body (JSON header and binary
tail) with ``request_compression_algorithm`` and asks for compressed responses
with ``response_compression_algorithm``; ``deflate`` means the zlib format.
Decompression stops at a byte limit, so a small compressed body cannot
expand into an unbounded allocation.
"""

from __future__ import annotations

import zlib

from app.errors import BadRequestError, PayloadTooLargeError, UnsupportedMediaTypeError

__all__ = ["MIN_COMPRESS_BYTES", "choose_encoding", "compress", "decompress"]

MIN_COMPRESS_BYTES = 1024
"""Responses shorter than this are sent as they are, whatever the client accepts."""

_COMPRESS_LEVEL = 1  # serving latency matters more than the last few percent of size
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS}


def decompress(body: bytes, content_encoding: str | None, limit: int) -> bytes:
    """Undo ``content_encoding`` (gzip or deflate; none or identity is a no-op).

    Raises:
        UnsupportedMediaTypeError: an encoding other than gzip, deflate or identity.
        BadRequestError: the body is not valid data of its encoding.
        PayloadTooLargeError: the decompressed body is over ``limit`` bytes.
    """
    encoding = (content_encoding or "identity").strip().lower()
    if encoding == "identity":
        return body
    if encoding not in _WBITS:
        raise UnsupportedMediaTypeError(
            f"unsupported Content-Encoding {content_encoding!r}; use gzip, deflate or none"
        )
    try:
        return _inflate(body, _WBITS[encoding], limit, encoding)
    except zlib.error as exc:
        if encoding == "deflate":  # some clients send raw deflate despite the RFC
            try:
                return _inflate(body, -zlib.MAX_WBITS, limit, encoding)
            except zlib.error:
                pass
        raise BadRequestError(f"request body is not valid {encoding} data: {exc}") from None


def _inflate(body: bytes, wbits: int, limit: int, encoding: str) -> bytes:
    inflater = zlib.decompressobj(wbits)
    data = inflater.decompress(body, limit + 1)
    if len(data) <= limit and not inflater.unconsumed_tail:
        data += inflater.flush()  # all input is consumed: nothing large is left to inflate
    if len(data) > limit or inflater.unconsumed_tail:
        raise PayloadTooLargeError(
            f"request body decompresses to more than {limit} bytes (MININN_MAX_REQUEST_BYTES)"
        )
    if not inflater.eof:
        raise zlib.error(f"truncated {encoding} stream")
    return data


def choose_encoding(accept_encoding: str | None) -> str | None:
    """The encoding to answer with: the client's preferred of gzip and deflate, or None."""
    if not accept_encoding:
        return None
    best: tuple[float, str] | None = None
    for item in accept_encoding.split(","):
        name, _, params = item.strip().partition(";")
        name = name.strip().lower()
        if name not in ("gzip", "deflate"):
            continue
        quality = _quality(params)
        if quality > 0 and (best is None or quality > best[0]):
            best = (quality, name)
    return None if best is None else best[1]


def _quality(params: str) -> float:
    for param in params.split(";"):
        key, _, value = param.strip().partition("=")
        if key.strip().lower() == "q":
            try:
                return float(value)
            except ValueError:
                return 0.0
    return 1.0


def compress(body: bytes, encoding: str) -> bytes:
    """``body`` compressed as ``encoding`` ("gzip" or "deflate", the zlib format)."""
    compressor = zlib.compressobj(_COMPRESS_LEVEL, zlib.DEFLATED, _WBITS[encoding])
    return compressor.compress(body) + compressor.flush()
