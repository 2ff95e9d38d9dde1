"""app.http.json_limits.parse_json reads the language json.loads reads, with the same errors,
whether it parses with json (exact integers) or with orjson (inference requests)."""

from __future__ import annotations

import json
import math

import pytest

from app.http.json_limits import parse_json

SAME_AS_JSON = [
    b'{"inputs": [{"data": [1, 2.5, -0.0, 1e-400]}]}',
    b"[NaN, Infinity, -Infinity, 1e400]",  # what orjson refuses, json (and Triton) read
    b"[18446744073709551615, -9223372036854775808]",  # the 64-bit extremes stay integers
    '{"a": [1, 2]}'.encode("utf-16"),
    b'"\\ud800"',  # a lone surrogate escape
    b'{"a": 1, "a": 2}',
    b"\xef\xbb\xbf[1]",  # a UTF-8 byte order mark
    '{"name": "caf\\u00e9", "é": [true, false, null]}'.encode(),
]


@pytest.mark.parametrize("exact_integers", [True, False])
@pytest.mark.parametrize("text", SAME_AS_JSON)
def test_documents_parse_as_json_loads_parses_them(text: bytes, exact_integers: bool) -> None:
    got = parse_json(text, "x", exact_integers=exact_integers)
    want = json.loads(text)
    assert json.dumps(got) == json.dumps(want)
    if isinstance(want, list):
        assert [type(v) for v in got] == [type(v) for v in want]


def test_integers_past_64_bits_are_exact_unless_orjson_parses() -> None:
    text = b"[123456789012345678901234567890, NaN]"
    exact = parse_json(text, "x")
    assert exact[0] == 123456789012345678901234567890 and math.isnan(exact[1])
    fast = parse_json(b"[123456789012345678901234567890]", "x", exact_integers=False)
    assert fast == [1.2345678901234568e29] and isinstance(fast[0], float)


@pytest.mark.parametrize("exact_integers", [True, False])
@pytest.mark.parametrize("text", [b"{", b"[1,]", b"", b'{"a" 1}', b"\xff\xfe\xfd", b"[1] [2]"])
def test_invalid_documents_raise_what_json_raises(text: bytes, exact_integers: bool) -> None:
    with pytest.raises((json.JSONDecodeError, UnicodeDecodeError)) as ours:
        parse_json(text, "x", exact_integers=exact_integers)
    with pytest.raises((json.JSONDecodeError, UnicodeDecodeError)) as theirs:
        json.loads(text)
    assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)
