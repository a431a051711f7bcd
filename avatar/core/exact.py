"""Dataclasses built from plain data whose every value already has its field's exact type.

A config file is checked by pydantic at the boundary (`avatar.core.config.parse_settings`),
but pydantic's import and the schema it builds for `Settings` cost ~110 ms, and a config file
is read by every command. Nearly every file a user writes holds exactly the types its fields
declare (a string where a string goes, a list of strings, a number within its bounds), and for
such data pydantic's checked result is the data itself, put into the dataclasses. `build`
makes that result directly, and gives up (None) on anything else: a value of another type,
an unknown or missing key, a value an `Annotated` marker refuses. What it gives up on,
pydantic checks, converts or refuses with its own message.

The markers' own rules are the ones pydantic runs (`avatar.core.config_markers`): a
marker's `before(value)` (a conversion ahead of the field's check, such as YAML's bare `off`
read as "off") and `keeps(value)` (a check after it) are called here as in its pydantic hook.

So what `build` accepts is a subset of what pydantic accepts, with the same result
(tests/core/test_exact.py checks both on generated data).
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from functools import cache
from typing import Any, Literal, TypeVar, Union

_T = TypeVar("_T")


class _GiveUp(Exception):
    """The data is not exactly of the declared types: pydantic is to check it."""


def build(cls: type[_T], data: Any) -> _T | None:
    """`cls` (a dataclass) made from `data`, when every value is exactly of its field's
    type; None when pydantic has to decide."""
    try:
        return typing.cast(_T, _value(cls, data))
    except _GiveUp:
        return None


@cache
def _fields(cls: type) -> tuple[tuple[str, Any, bool], ...]:
    """Each field's name, resolved type (with `Annotated` kept), and whether it is required."""
    hints = typing.get_type_hints(cls, include_extras=True)
    return tuple(
        (
            f.name,
            hints[f.name],
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
        )
        for f in dataclasses.fields(cls)
        if f.init
    )


def _value(kind: Any, value: Any) -> Any:
    origin = typing.get_origin(kind)
    if origin is typing.Annotated:
        markers = kind.__metadata__
        for marker in markers:
            if hasattr(marker, "before"):
                value = marker.before(value)
        inner = _value(kind.__origin__, value)
        if not all(marker.keeps(inner) for marker in markers if hasattr(marker, "keeps")):
            raise _GiveUp
        return inner
    if kind is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in typing.get_args(kind):
            return None
        members = [a for a in typing.get_args(kind) if a is not type(None)]
        if len(members) != 1:
            raise _GiveUp
        return _value(members[0], value)
    if origin is Literal:
        if any(type(value) is type(c) and value == c for c in typing.get_args(kind)):
            return value
        raise _GiveUp
    if origin is list:
        if type(value) is not list:
            raise _GiveUp
        (item,) = typing.get_args(kind)
        return [_value(item, v) for v in value]
    if origin is dict:
        if type(value) is not dict:
            raise _GiveUp
        key, item = typing.get_args(kind)
        return {_value(key, k): _value(item, v) for k, v in value.items()}
    if dataclasses.is_dataclass(kind):
        return _dataclass(typing.cast(type, kind), value)
    if kind is float and type(value) in (int, float):
        try:
            return float(value)
        except OverflowError:
            raise _GiveUp from None
    if type(value) is kind and (kind in (str, int, bool, float) or _is_datetime(kind)):
        return value
    raise _GiveUp


def _is_datetime(kind: Any) -> bool:
    # (a datetime, as pydantic passes one through; none exists before its module loads)
    loaded = sys.modules.get("datetime")
    return loaded is not None and kind is loaded.datetime


def _dataclass(cls: type, value: Any) -> Any:
    if type(value) is not dict:
        raise _GiveUp
    fields = _fields(cls)
    if not set(value) <= {name for name, _, _ in fields}:
        raise _GiveUp
    args = {}
    for name, kind, required in fields:
        if name in value:
            args[name] = _value(kind, value[name])
        elif required:
            raise _GiveUp
    return cls(**args)
