"""Interventions on the wire: JSON objects and index strings into mininn Interventions, and the
errors that name the request field."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from app.v2.capture_fields import intervention_from_json, interventions_from_json, parse_index
from mininn import nn


@pytest.mark.parametrize(
    ("wire", "key"),
    [
        (3, np.s_[:, 3]),
        (-1, np.s_[:, -1]),
        ([0, 2], np.s_[:, [0, 2]]),
        (":, :, 0", np.s_[:, :, 0]),
        ("..., 3", np.s_[..., 3]),
        ("0, 2:5", np.s_[0, 2:5]),
        (" 1::-1 ,... ", np.s_[1::-1, ...]),
    ],
)
def test_wire_indexes_become_the_numpy_key_they_mean(wire, key):
    assert parse_index(wire) == key


def test_a_parsed_index_shows_itself_as_the_request_wrote_it():
    assert repr(parse_index(":, 1:4")) == "':, 1:4'"
    assert repr(parse_index([7])) == "[7]"
    assert parse_index(None) is None


def test_a_json_intervention_edits_like_the_python_one():
    model = nn.Sequential(nn.Identity())
    x = mininn.ones(2, 3, 2)
    wire = intervention_from_json({"module": "0", "op": "scale", "value": 2, "index": [1, 2]}, "iv")
    with nn.ActivationCapture(model, interventions=[wire]):
        got = model(x).numpy()
    with nn.ActivationCapture(model, interventions=[nn.Intervention("0", "scale", 2, np.s_[:, [1, 2]])]):
        expected = model(x).numpy()
    np.testing.assert_array_equal(got, expected)
    assert got[:, 0].tolist() == [[1, 1], [1, 1]] and got[:, 1:].max() == 2


WIRE_ERRORS = [
    ("stem", "interventions[0] must be an object with 'module' and 'op', got 'stem'"),
    ({"module": "stem"}, "interventions[0].op is required"),
    ({"op": "zero"}, "interventions[0].module is required"),
    (
        {"module": "stem", "op": "zero", "scale": 2},
        "interventions[0].scale is not a known key; use 'module', 'op', 'value', 'index', 'element'",
    ),
    (
        {"module": "stem", "op": "mul", "value": 2},
        "interventions[0].op must be one of 'zero', 'scale', 'add', 'set', got 'mul'",
    ),
    (
        {"module": "stem", "op": "add", "value": "one"},
        "interventions[0].value must be a number or a (nested) list of numbers, got 'one'",
    ),
    (
        {"module": "stem", "op": "zero", "index": []},
        "interventions[0].index must be an int, a non-empty list of ints (dimension 1) or an index "
        "expression string such as ':, :, 0', got []",
    ),
    (
        {"module": "stem", "op": "zero", "index": True},
        "interventions[0].index must be an int, a list of ints (dimension 1) or an index expression "
        "string such as ':, :, 0', got True",
    ),
    (
        {"module": "stem", "op": "zero", "index": ":, x"},
        "interventions[0].index ':, x': cannot read 'x'; use ints, slices (a:b:c) and one '...', "
        "separated by commas",
    ),
    (
        {"module": "stem", "op": "zero", "index": "..., 1, ..."},
        "interventions[0].index '..., 1, ...': an index can only have a single ellipsis ('...')",
    ),
    (
        {"module": "stem", "op": "zero", "index": "::0"},
        "interventions[0].index '::0': slice step cannot be zero",
    ),
    (
        {"module": "stem", "op": "mul", "index": "x"},
        "interventions[0].op must be one of 'zero', 'scale', 'add', 'set', got 'mul'",
    ),  # index read last
    (
        {"module": "stem", "op": "zero", "element": 1.5},
        "interventions[0].element must be a position, a key, or a path to a tensor inside the output as "
        "capture names write it ('1.0' or [1, 0]), got 1.5",
    ),
]


@pytest.mark.parametrize(("spec", "message"), WIRE_ERRORS, ids=[m for _, m in WIRE_ERRORS])
def test_bad_json_interventions_raise_capture_error_naming_the_request_field(spec, message):
    with pytest.raises(nn.CaptureError) as info:
        intervention_from_json(spec, "interventions[0]")
    assert str(info.value) == message
    assert message.startswith(info.value.field + " ")


def test_interventions_from_json_reads_lazily_and_names_the_position():
    specs = [{"module": "a", "op": "zero"}, {"module": "b", "op": "add"}]
    interventions = interventions_from_json(specs)
    assert next(interventions) == nn.Intervention("a", "zero")
    with pytest.raises(nn.CaptureError, match=r"^interventions\[1\]\.value is required by op 'add'$"):
        next(interventions)


def test_interventions_from_json_wants_a_list():
    with pytest.raises(nn.CaptureError, match=r"^interventions must be a list of interventions, got \{"):
        list(interventions_from_json({"module": "a", "op": "zero"}))
