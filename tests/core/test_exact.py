"""`avatar.core.exact.build` against pydantic: whatever it builds, pydantic builds the same from
the same data (to the type of every value), and it builds the files users write."""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from avatar.core.config import Settings
from avatar.core.exact import build
from tests.hardening.fuzzing import JSON, _paths, _replace

EXAMPLE = Path(__file__).parents[2] / "examples" / "avatar.example.yaml"
CHECKED = TypeAdapter(Settings)


def _checked(data: Any) -> Settings | None:
    try:
        return CHECKED.validate_python(data)
    except ValidationError:
        return None


def _same(data: Any) -> None:
    built = build(Settings, data)
    if built is None:
        return
    checked = _checked(data)
    assert checked is not None, f"built what pydantic refuses: {data!r}"
    # repr: equal values of other types (1 and 1.0) count as a difference.
    assert repr(built) == repr(checked)


def _typed(kind: Any) -> st.SearchStrategy[Any]:
    """Values of `kind` mostly, now and then anything (a wrong type, a junk key)."""
    return st.one_of(_of(kind), _of(kind), _of(kind), JSON)


def _of(kind: Any) -> st.SearchStrategy[Any]:
    origin = typing.get_origin(kind)
    if origin is typing.Annotated:
        return _typed(kind.__origin__)
    if origin in (Union, types.UnionType):
        return st.one_of(*(_typed(a) for a in typing.get_args(kind)))
    if origin is Literal:
        return st.sampled_from(typing.get_args(kind))
    if origin is list:
        return st.lists(_typed(typing.get_args(kind)[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(st.text(max_size=6), _typed(typing.get_args(kind)[1]), max_size=3)
    if dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind, include_extras=True)
        fields = {f.name: _typed(hints[f.name]) for f in dataclasses.fields(kind)}
        return st.fixed_dictionaries({}, optional=fields)
    simple: dict[Any, st.SearchStrategy[Any]] = {
        str: st.text(max_size=8),
        bool: st.booleans(),
        int: st.integers(-5, 10**6) | st.integers(),
        float: st.floats(-2, 2) | st.integers(-3, 3) | st.floats(),
        type(None): st.none(),
        Any: JSON,
    }
    return simple[kind]


# No deadline: whichever example runs first builds pydantic's schema of `Settings` (~100 ms,
# 322 ms once on a loaded machine, where the rest take ~7 ms).
@settings(max_examples=400, deadline=None)
@given(data=_of(Settings))
def test_what_is_built_is_what_pydantic_builds(data: Any) -> None:
    _same(data)


@settings(deadline=None)
@given(data=st.data())
def test_the_example_with_one_value_replaced(data: st.DataObject) -> None:
    doc = yaml.safe_load(EXAMPLE.read_text())
    path = data.draw(st.sampled_from(_paths(doc)[1:]))
    _same(_replace(doc, path, data.draw(JSON)))


def test_the_documented_example_is_built_without_pydantic() -> None:
    doc = yaml.safe_load(EXAMPLE.read_text())
    built = build(Settings, doc)
    assert built is not None
    assert repr(built) == repr(_checked(doc))


def test_yaml_words_read_as_booleans_are_converted_as_pydantic_does() -> None:
    for data in ({"scope": {"sandbox": False}}, {"scope": {"network": True}}):  # `off`, `on`
        built = build(Settings, data)
        assert built is not None
        assert repr(built) == repr(_checked(data))
    off = build(Settings, {"scope": {"sandbox": False}})
    assert off is not None and off.scope.sandbox == "off"


def test_what_pydantic_converts_or_refuses_is_left_to_it() -> None:
    for data in (
        {"scope": {"sandbox": True}},  # no word for it: refused
        {"handoff_share": 2},  # out of bounds
        {"scope": {"sockets": ["nope"]}},  # neither a name nor a path
        {"models": [{"api": "openai"}]},  # no id
        {"provider": "claude", "nonsense": 1},  # an unknown key
        {"server": {"keep_sessions": "5"}},  # a number written as a string
    ):
        assert build(Settings, data) is None, data
