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
from collections.abc import Callable
from functools import cache
from typing import Any, Literal, TypeVar, Union

_T = TypeVar("_T")


class _GiveUp(Exception):
    """The data is not exactly of the declared types: pydantic is to check it."""


def build(cls: type[_T], data: Any) -> _T | None:
    """`cls` (a dataclass) made from `data`, when every value is exactly of its field's
    type; None when pydantic has to decide."""
    try:
        return typing.cast(_T, _check(cls)(data))
    except _GiveUp:
        return None


#: What checks (and makes) a value of a type: the value, or `_GiveUp`.
Check = Callable[[Any], Any]
#: Each type's check, made once (a native index is checked line by line, thousands at a
#: time), by the type's id: an `Annotated` type's markers need not be hashable.
_CHECKS: dict[int, tuple[Any, Check]] = {}


def _check(kind: Any) -> Check:
    found = _CHECKS.get(id(kind))
    if found is not None and found[0] is kind:
        return found[1]
    made = _make(kind)
    _CHECKS[id(kind)] = (kind, made)  # (the type kept alive: its id stays its own)
    return made


def _make(kind: Any) -> Check:
    origin = typing.get_origin(kind)
    if origin is typing.Annotated:
        return _annotated(kind.__origin__, kind.__metadata__)
    if kind is Any:
        return _same
    if origin in (Union, types.UnionType):
        return _union(typing.get_args(kind))
    if origin is Literal:
        return _literal(typing.get_args(kind))
    if origin is list:
        return _list(_check(typing.get_args(kind)[0]))
    if origin is dict:
        key, item = typing.get_args(kind)
        return _dict(_check(key), _check(item))
    if dataclasses.is_dataclass(kind):
        return _dataclass(typing.cast(type, kind))
    if kind is float:
        return _float
    if kind in (str, int, bool) or _is_datetime(kind):
        return _exactly(kind)
    return _refuse


def _same(value: Any) -> Any:
    return value


def _refuse(value: Any) -> Any:
    raise _GiveUp


def _annotated(inner_kind: Any, markers: tuple[Any, ...]) -> Check:
    inner = _check(inner_kind)
    befores = [marker.before for marker in markers if hasattr(marker, "before")]
    keeps = [marker.keeps for marker in markers if hasattr(marker, "keeps")]

    def annotated(value: Any) -> Any:
        for before in befores:
            value = before(value)
        made = inner(value)
        if not all(keep(made) for keep in keeps):
            raise _GiveUp
        return made

    return annotated


def _union(members: tuple[Any, ...]) -> Check:
    optional = type(None) in members
    others = [m for m in members if m is not type(None)]
    only = _check(others[0]) if len(others) == 1 else _refuse

    def union(value: Any) -> Any:
        if value is None and optional:
            return None
        return only(value)

    return union


def _literal(choices: tuple[Any, ...]) -> Check:
    def literal(value: Any) -> Any:
        if any(type(value) is type(c) and value == c for c in choices):
            return value
        raise _GiveUp

    return literal


def _list(item: Check) -> Check:
    def listed(value: Any) -> Any:
        if type(value) is not list:
            raise _GiveUp
        return [item(v) for v in value]

    return listed


def _dict(key: Check, item: Check) -> Check:
    def mapped(value: Any) -> Any:
        if type(value) is not dict:
            raise _GiveUp
        return {key(k): item(v) for k, v in value.items()}

    return mapped


def _float(value: Any) -> Any:
    if type(value) not in (int, float):
        raise _GiveUp
    try:
        return float(value)
    except OverflowError:
        raise _GiveUp from None


def _exactly(kind: type) -> Check:
    def exactly(value: Any) -> Any:
        if type(value) is not kind:
            raise _GiveUp
        return value

    return exactly


def _is_datetime(kind: Any) -> bool:
    # (a datetime, as pydantic passes one through; none exists before its module loads)
    loaded = sys.modules.get("datetime")
    return loaded is not None and kind is loaded.datetime


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


def _dataclass(cls: type) -> Check:
    # Its fields' checks are made on its first check (a dataclass may name itself).
    plan: list[tuple[str, Check, bool]] = []
    names: set[str] = set()

    def instance(value: Any) -> Any:
        if not plan:
            plan.extend((name, _check(kind), required) for name, kind, required in _fields(cls))
            names.update(name for name, _, _ in plan)
        if type(value) is not dict or not value.keys() <= names:
            raise _GiveUp
        args = {}
        for name, check, required in plan:
            if name in value:
                args[name] = check(value[name])
            elif required:
                raise _GiveUp
        return cls(**args)

    return instance
