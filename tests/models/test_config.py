"""Config validation: keys, types and ranges, with messages that list the accepted keys."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass
from typing import Literal

import pytest

from models.config import ConfigValueError, accepted_keys, config_to_dict, make_config, require
from models.errors import ArchitectureError


@dataclass(frozen=True)
class ToyConfig:
    width: int = 4  # a positive integer
    scale: float = 1.0
    name: str = "toy"
    enabled: bool = True
    sizes: tuple[int, ...] = (1, 2)
    pair: tuple[int, int] = (3, 4)
    mode: Literal["a", "b"] = "a"
    limit: int | None = None

    def __post_init__(self) -> None:
        require(self.width > 0, "width", self.width, "a positive integer")


KEYS = "enabled, limit, mode, name, pair, scale, sizes, width"


def test_empty_values_give_the_defaults():
    assert make_config("toy", ToyConfig, {}) == ToyConfig()
    assert make_config("toy", ToyConfig, None) == ToyConfig()


def test_an_instance_is_returned_unchanged():
    config = ToyConfig(width=7)
    assert make_config("toy", ToyConfig, config) is config


def test_json_lists_become_tuples_and_ints_become_floats():
    config = make_config("toy", ToyConfig, {"sizes": [5, 6, 7], "pair": [1, 2], "scale": 2})
    assert config.sizes == (5, 6, 7)
    assert config.pair == (1, 2)
    assert config.scale == 2.0 and isinstance(config.scale, float)


def test_optional_field_takes_none_or_its_type():
    assert make_config("toy", ToyConfig, {"limit": None}).limit is None
    assert make_config("toy", ToyConfig, {"limit": 3}).limit == 3


def test_unknown_key_names_the_key_and_the_accepted_keys():
    with pytest.raises(ArchitectureError) as info:
        make_config("toy", ToyConfig, {"widht": 3})
    assert str(info.value) == f"unknown config key 'widht' for architecture 'toy'; accepted keys: {KEYS}"


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("width", "3", "an integer"),
        ("width", True, "an integer"),
        ("width", 2.5, "an integer"),
        ("scale", "x", "a number"),
        ("enabled", 1, "a boolean"),
        ("name", 3, "a string"),
        ("sizes", 3, "a list of integers"),
        ("sizes", [1, "2"], "a list of integers"),
        ("pair", [1, 2, 3], "a list of 2 integers"),
        ("mode", "c", "one of 'a', 'b'"),
        ("limit", "x", "an integer or null"),
    ],
)
def test_value_of_wrong_type_names_key_value_and_expectation(key, value, expected):
    with pytest.raises(ArchitectureError) as info:
        make_config("toy", ToyConfig, {key: value})
    assert str(info.value) == (
        f"invalid value {value!r} for config key {key!r} of architecture 'toy': "
        f"expected {expected}; accepted keys: {KEYS}"
    )


def test_value_out_of_range_names_key_and_requirement():
    with pytest.raises(ArchitectureError) as info:
        make_config("toy", ToyConfig, {"width": 0})
    assert str(info.value) == (
        "invalid value 0 for config key 'width' of architecture 'toy': "
        f"expected a positive integer; accepted keys: {KEYS}"
    )


@dataclass(frozen=True)
class AliasedConfig(ToyConfig):
    @classmethod
    def prepare_mapping(cls, values):
        if values.pop("legacy", False):
            raise ConfigValueError("legacy", True, "false (legacy mode is not implemented)")
        if "w" in values:
            values["width"] = values.pop("w")
        return values


def test_prepare_mapping_hook_runs_before_the_key_check():
    assert make_config("toy", AliasedConfig, {"w": 7, "mode": "b"}) == AliasedConfig(width=7, mode="b")
    with pytest.raises(ArchitectureError, match="unknown config key 'widht' for architecture 'toy'"):
        make_config("toy", AliasedConfig, {"widht": 7})


def test_prepare_mapping_hook_errors_name_the_key():
    with pytest.raises(ArchitectureError) as info:
        make_config("toy", AliasedConfig, {"legacy": True})
    assert str(info.value) == (
        "invalid value True for config key 'legacy' of architecture 'toy': "
        f"expected false (legacy mode is not implemented); accepted keys: {KEYS}"
    )


def test_architecture_error_is_a_value_error():
    assert issubclass(ArchitectureError, ValueError)


def test_configs_are_frozen():
    config = make_config("toy", ToyConfig, {})
    with pytest.raises(FrozenInstanceError):
        config.width = 3  # type: ignore[misc]


def test_config_to_dict_round_trips_through_make_config():
    config = ToyConfig(width=9, sizes=(4,), pair=(5, 6), mode="b", limit=2)
    as_dict = config_to_dict(config)
    assert as_dict["sizes"] == [4] and as_dict["pair"] == [5, 6]
    assert make_config("toy", ToyConfig, as_dict) == config


def test_accepted_keys_are_sorted_field_names():
    assert ", ".join(accepted_keys(ToyConfig)) == KEYS
