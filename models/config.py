"""Checking a config mapping against an architecture's frozen config dataclass.

A config arrives as JSON (``model.json``) or keyword arguments. Every key must be a
field of the dataclass, every value must fit the field's annotation (tuples may come as
JSON lists), and the dataclass's ``__post_init__`` checks ranges through :func:`require`.
Any failure becomes an :class:`~models.errors.ArchitectureError` that names the key and
lists the accepted keys.

A config dataclass may define a classmethod ``prepare_mapping(values) -> dict`` that
:func:`make_config` applies to the mapping first, to accept another vocabulary for the
same settings (``bert_encoder`` takes a Hugging Face ``config.json``); it may raise
:class:`ConfigValueError`.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, Union

from models.errors import ArchitectureError

__all__ = ["ConfigValueError", "accepted_keys", "config_to_dict", "make_config", "require"]

C = TypeVar("C")


class ConfigValueError(ValueError):
    """Raised by a config's ``__post_init__`` for a value out of range."""

    def __init__(self, key: str, value: Any, expected: str) -> None:
        super().__init__(f"{key}={value!r}: expected {expected}")
        self.key, self.value, self.expected = key, value, expected


def require(condition: bool, key: str, value: Any, expected: str) -> None:
    """Raise :class:`ConfigValueError` for ``key`` unless ``condition`` holds.

    Args:
        condition: What must be true of the value.
        key: The config field checked.
        value: Its value, quoted in the message.
        expected: What a valid value is, e.g. ``"a positive integer"``.
    """
    if not condition:
        raise ConfigValueError(key, value, expected)


def accepted_keys(config_cls: type) -> list[str]:
    """The sorted field names of a config dataclass."""
    return sorted(f.name for f in dataclasses.fields(config_cls))


def make_config(architecture: str, config_cls: type[C], values: Mapping[str, Any] | C | None) -> C:
    """Build and validate ``config_cls`` from ``values`` (a mapping or an instance).

    A mapping goes through ``config_cls.prepare_mapping`` first where the class defines it.

    Raises:
        ArchitectureError: A key that is not a field, or a value of the wrong type or range;
            the message names the key and the accepted keys.
    """
    if isinstance(values, config_cls):
        return values
    keys = accepted_keys(config_cls)
    values = _prepare(architecture, config_cls, keys, dict(values or {}))
    hints = typing.get_type_hints(config_cls)
    for key in values:
        if key not in keys:
            raise ArchitectureError(
                f"unknown config key {key!r} for architecture {architecture!r}; "
                f"accepted keys: {', '.join(keys)}"
            )
    coerced = {}
    for key, value in values.items():
        try:
            coerced[key] = _coerce(value, hints[key])
        except TypeError as exc:
            raise _bad_value(architecture, keys, key, value, str(exc)) from None
    try:
        return config_cls(**coerced)
    except ConfigValueError as exc:
        raise _bad_value(architecture, keys, exc.key, exc.value, exc.expected) from None


def _prepare(architecture: str, config_cls: type, keys: list[str], values: dict[str, Any]) -> dict[str, Any]:
    """``values`` through the config class's ``prepare_mapping`` hook, where it has one."""
    prepare = getattr(config_cls, "prepare_mapping", None)
    if prepare is None:
        return values
    try:
        return dict(prepare(values))
    except ConfigValueError as exc:
        raise _bad_value(architecture, keys, exc.key, exc.value, exc.expected) from None


def config_to_dict(config: Any) -> dict[str, Any]:
    """A JSON-ready dict of a config dataclass (tuples become lists)."""
    return {f.name: _jsonable(getattr(config, f.name)) for f in dataclasses.fields(config)}


def _bad_value(architecture: str, keys: list[str], key: str, value: Any, expected: str) -> ArchitectureError:
    return ArchitectureError(
        f"invalid value {value!r} for config key {key!r} of architecture {architecture!r}: "
        f"expected {expected}; accepted keys: {', '.join(keys)}"
    )


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


def _coerce(value: Any, annotation: Any) -> Any:
    """``value`` converted to ``annotation``'s type, or TypeError naming what was expected."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        return _coerce_union(value, typing.get_args(annotation))
    if origin is Literal:
        choices = typing.get_args(annotation)
        if value not in choices or type(value) is not type(choices[choices.index(value)]):
            raise TypeError(f"one of {', '.join(repr(c) for c in choices)}")
        return value
    if origin is tuple:
        return _coerce_tuple(value, typing.get_args(annotation))
    return _coerce_scalar(value, annotation)


def _coerce_union(value: Any, options: tuple[Any, ...]) -> Any:
    if value is None and type(None) in options:
        return None
    expected = []
    for option in options:
        if option is type(None):
            expected.append("null")
            continue
        try:
            return _coerce(value, option)
        except TypeError as exc:
            expected.append(str(exc))
    raise TypeError(" or ".join(expected))


def _coerce_tuple(value: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    variable = not args or (len(args) == 2 and args[1] is Ellipsis)
    item = args[0] if args else Any
    count = "" if variable else f"{len(args)} "
    expected = f"a list of {count}{_PLURALS.get(item, 'values')}"
    if not isinstance(value, (list, tuple)) or (not variable and len(value) != len(args)):
        raise TypeError(expected)
    items = [item] * len(value) if variable else list(args)
    try:
        return tuple(_coerce(v, a) for v, a in zip(value, items))
    except TypeError:
        raise TypeError(expected) from None


_PLURALS = {bool: "booleans", int: "integers", float: "numbers", str: "strings"}
_DESCRIPTIONS = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}


def _describe(annotation: Any) -> str:
    return _DESCRIPTIONS.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _coerce_scalar(value: Any, annotation: Any) -> Any:
    if annotation is Any:
        return value
    if annotation is bool:
        ok = isinstance(value, bool)
    elif annotation is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif annotation is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    else:
        ok = isinstance(value, annotation)
    if not ok:
        raise TypeError(_describe(annotation))
    return value
