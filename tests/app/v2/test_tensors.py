from __future__ import annotations

import struct

import numpy as np
import pytest

from app.errors import BadRequestError, UnprocessableError
from app.v2.tensors import decode_binary, decode_json, encode_binary, encode_json


def test_json_nested_and_flat_data_decode_to_the_same_array() -> None:
    nested = decode_json([[1, 2, 3], [4, 5, 6]], "FP32", [2, 3], "input 'x'")
    flat = decode_json([1, 2, 3, 4, 5, 6], "FP32", [2, 3], "input 'x'")
    assert nested.dtype == np.float32 and nested.shape == (2, 3)
    np.testing.assert_array_equal(nested, flat)


def test_json_integers_keep_their_dtype() -> None:
    array = decode_json([1, -2, 3], "INT64", [3], "input 'ids'")
    assert array.dtype == np.int64
    assert array.tolist() == [1, -2, 3]


def test_json_bools() -> None:
    assert decode_json([True, False], "BOOL", [2], "input 'mask'").tolist() == [True, False]


def test_json_element_count_must_match_the_shape() -> None:
    with pytest.raises(
        UnprocessableError, match=r"input 'x': shape \[2, 3\] needs 6 elements but data has 5"
    ):
        decode_json([1, 2, 3, 4, 5], "FP32", [2, 3], "input 'x'")


def test_json_strings_are_not_numbers() -> None:
    with pytest.raises(UnprocessableError, match="input 'x': data holds 'a', not FP32 values"):
        decode_json(["a", "b"], "FP32", [2], "input 'x'")
    with pytest.raises(UnprocessableError, match="input 'x': data holds strings, not INT32 values"):
        decode_json(["NaN", "b"], "INT32", [2], "input 'x'")


def test_json_floats_are_not_integers() -> None:
    with pytest.raises(
        UnprocessableError, match="input 'ids': data holds non-integer numbers, not INT64 values"
    ):
        decode_json([1.5, 2.0], "INT64", [2], "input 'ids'")


def test_json_integers_are_not_bools() -> None:
    with pytest.raises(UnprocessableError, match="input 'mask': data holds integers, not BOOL values"):
        decode_json([1, 0], "BOOL", [2], "input 'mask'")


def test_json_ragged_data_is_refused() -> None:
    with pytest.raises(UnprocessableError, match="input 'x': data is not a rectangular array of numbers"):
        decode_json([[1, 2], [3]], "FP32", [2, 2], "input 'x'")


def test_json_integer_out_of_range_is_refused() -> None:
    with pytest.raises(
        UnprocessableError, match=r"input 'x': value 300 is out of range for UINT8 \[0, 255\]"
    ):
        decode_json([1, 300], "UINT8", [2], "input 'x'")


def test_json_integer_past_64_bits_is_out_of_range() -> None:
    # The inference parser (orjson) reads an integer past 64 bits as a float.
    with pytest.raises(UnprocessableError, match=r"input 'x': value -1e\+30 is out of range for INT64"):
        decode_json([1.0, -1e30], "INT64", [2], "input 'x'")


def test_json_bytes_are_utf8_strings() -> None:
    array = decode_json([["héllo", ""]], "BYTES", [1, 2], "input 'text'")
    assert array.dtype == object and array.shape == (1, 2)
    assert array.tolist() == [["héllo".encode(), b""]]


def test_json_bytes_must_be_strings() -> None:
    with pytest.raises(
        UnprocessableError, match="input 'text': BYTES data must be strings, element 1 is int"
    ):
        decode_json(["a", 5], "BYTES", [2], "input 'text'")


def test_binary_fp32_is_read_little_endian() -> None:
    x = np.arange(6, dtype="<f4").reshape(2, 3)
    body = b"HDR" + x.tobytes()
    array = decode_binary(body, 3, x.nbytes, "FP32", [2, 3], "input 'x'")
    np.testing.assert_array_equal(array, x)
    assert array.flags.aligned and array.dtype.isnative


def test_binary_size_must_match_the_shape() -> None:
    with pytest.raises(
        BadRequestError, match=r"input 'x': binary_data_size is 20 but shape \[2, 3\] of FP32 needs 24 bytes"
    ):
        decode_binary(bytes(24), 0, 20, "FP32", [2, 3], "input 'x'")


def test_binary_bool_is_one_byte_each() -> None:
    array = decode_binary(bytes([1, 0, 1]), 0, 3, "BOOL", [3], "input 'm'")
    assert array.dtype == np.bool_ and array.tolist() == [True, False, True]


def test_binary_bytes_use_length_prefixes() -> None:
    raw = struct.pack("<I", 2) + b"hi" + struct.pack("<I", 3) + b"abc"
    array = decode_binary(raw, 0, len(raw), "BYTES", [2], "input 't'")
    assert array.tolist() == [b"hi", b"abc"]


def test_binary_bytes_prefix_past_the_end_is_refused() -> None:
    raw = struct.pack("<I", 10) + b"hi"
    with pytest.raises(
        BadRequestError, match="input 't': BYTES element 0 declares 10 bytes but only 2 remain"
    ):
        decode_binary(raw, 0, len(raw), "BYTES", [1], "input 't'")


def test_binary_bytes_truncated_prefix_is_refused() -> None:
    raw = struct.pack("<I", 2) + b"hi" + b"\x01\x00"
    with pytest.raises(
        BadRequestError, match="input 't': BYTES element 1 has a truncated 4-byte length prefix"
    ):
        decode_binary(raw, 0, len(raw), "BYTES", [2], "input 't'")


def test_binary_bytes_count_must_match_the_shape() -> None:
    raw = struct.pack("<I", 2) + b"hi"
    with pytest.raises(
        BadRequestError, match=r"input 't': shape \[2\] needs 2 BYTES elements but the data holds 1"
    ):
        decode_binary(raw, 0, len(raw), "BYTES", [2], "input 't'")


def test_encode_json_is_flat_row_major() -> None:
    assert encode_json(np.array([[1.5, 2.0], [3.0, 4.0]], dtype=np.float32), "output 'y'") == [
        1.5,
        2.0,
        3.0,
        4.0,
    ]


def test_encode_json_fp16_gives_numbers() -> None:
    assert encode_json(np.array([0.5, 1.0], dtype=np.float16), "output 'y'") == [0.5, 1.0]


def test_encode_json_bytes_decodes_utf8() -> None:
    assert encode_json(np.array([b"a", b"b"], dtype=object), "output 't'") == ["a", "b"]


def test_encode_json_refuses_non_utf8_bytes() -> None:
    with pytest.raises(UnprocessableError, match="output 't' holds bytes that are not UTF-8"):
        encode_json(np.array([b"\xff"], dtype=object), "output 't'")


def test_encode_binary_round_trips_through_decode() -> None:
    x = np.linspace(-1, 1, 12, dtype=np.float64).reshape(3, 4)
    raw = encode_binary(x)
    np.testing.assert_array_equal(decode_binary(raw, 0, len(raw), "FP64", [3, 4], "y"), x)
    text = np.array([b"hi", b"", b"abc"], dtype=object)
    raw = encode_binary(text)
    assert raw == b"\x02\0\0\0hi\0\0\0\0\x03\0\0\0abc"
    assert decode_binary(raw, 0, len(raw), "BYTES", [3], "t").tolist() == text.tolist()


def test_encode_binary_of_a_non_contiguous_array_is_row_major() -> None:
    x = np.arange(6, dtype=np.int64).reshape(2, 3).T
    assert encode_binary(x) == np.ascontiguousarray(x).astype("<i8").tobytes()
