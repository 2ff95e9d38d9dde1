from __future__ import annotations

import gzip
import zlib

import pytest

from app.errors import BadRequestError, PayloadTooLargeError, UnsupportedMediaTypeError
from app.v2.compression import choose_encoding, compress, decompress

BODY = b'{"inputs": []}' * 100


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_compress_then_decompress_round_trips(encoding: str) -> None:
    assert decompress(compress(BODY, encoding), encoding, limit=10_000) == BODY


def test_decompress_reads_what_tritonclient_sends() -> None:
    assert decompress(gzip.compress(BODY), "gzip", limit=10_000) == BODY
    assert decompress(zlib.compress(BODY), "deflate", limit=10_000) == BODY


def test_decompress_accepts_raw_deflate() -> None:
    raw = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    assert decompress(raw.compress(BODY) + raw.flush(), "deflate", limit=10_000) == BODY


@pytest.mark.parametrize("encoding", [None, "", "identity", " Identity "])
def test_no_encoding_returns_the_body(encoding: str | None) -> None:
    assert decompress(BODY, encoding, limit=10) is BODY


def test_unknown_encoding_is_415() -> None:
    with pytest.raises(
        UnsupportedMediaTypeError, match="unsupported Content-Encoding 'br'; use gzip, deflate or none"
    ):
        decompress(BODY, "br", limit=10_000)


def test_corrupt_gzip_is_400() -> None:
    with pytest.raises(BadRequestError, match="request body is not valid gzip data"):
        decompress(b"not gzip at all", "gzip", limit=10_000)


def test_truncated_gzip_is_400() -> None:
    with pytest.raises(BadRequestError, match="request body is not valid gzip data: truncated gzip stream"):
        decompress(gzip.compress(BODY)[:-12], "gzip", limit=10_000)


def test_decompression_bomb_stops_at_the_limit() -> None:
    bomb = gzip.compress(b"\0" * 5_000_000)
    with pytest.raises(PayloadTooLargeError, match="request body decompresses to more than 1000 bytes"):
        decompress(bomb, "gzip", limit=1000)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("", None),
        ("gzip", "gzip"),
        ("deflate", "deflate"),
        ("br, gzip", "gzip"),
        ("gzip;q=0.5, deflate", "deflate"),
        ("gzip;q=0", None),
        ("identity", None),
        ("GZIP", "gzip"),
        ("gzip;q=bad, deflate;q=0.1", "deflate"),
    ],
)
def test_choose_encoding_follows_accept_encoding(header: str | None, expected: str | None) -> None:
    assert choose_encoding(header) == expected
