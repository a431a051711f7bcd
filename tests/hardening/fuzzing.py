"""Hypothesis strategies shared by the fuzz tests: arbitrary JSON, and damaged JSONL files."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
#: Any JSON value, a few levels deep.
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a parsed JSON document (the root included)."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _replace(doc: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    doc[head] = _replace(doc[head], rest, new)
    return doc


@st.composite
def damaged_line(draw: st.DrawFn, line: bytes) -> bytes:
    """`line` (one JSONL line, newline included) damaged in one of the ways files get damaged."""
    kind = draw(st.sampled_from(["value", "value", "value", "cut", "bytes", "json", "utf8"]))
    body = line.rstrip(b"\n")
    if kind == "cut":  # a torn write
        return body[: draw(st.integers(0, max(0, len(body) - 1)))]
    if kind == "bytes":
        return draw(st.binary(max_size=80)).replace(b"\n", b" ") + b"\n"
    if kind == "json":
        return json.dumps(draw(JSON)).encode() + b"\n"
    if kind == "utf8":  # invalid UTF-8 spliced into the line
        at = draw(st.integers(0, len(body)))
        return body[:at] + b"\xff\xfe\xc3" + body[at:] + b"\n"
    try:
        doc = json.loads(body)
    except ValueError:
        return line
    path = draw(st.sampled_from(_paths(doc)))
    return json.dumps(_replace(doc, path, draw(JSON))).encode() + b"\n"


@st.composite
def damaged_file(draw: st.DrawFn, lines: list[bytes], keep_first: bool = False) -> bytes:
    """The lines of a JSONL file with some damaged, dropped or repeated."""
    out = list(lines)
    for _ in range(draw(st.integers(1, 4))):
        if not out:
            break
        lo = 1 if keep_first and len(out) > 1 else 0
        i = draw(st.integers(lo, len(out) - 1))
        op = draw(st.sampled_from(["damage", "damage", "drop", "repeat"]))
        if op == "damage":
            out[i] = draw(damaged_line(out[i]))
        elif op == "drop" and (i or not keep_first):
            del out[i]
        else:
            out.insert(i, out[i])
    return b"".join(x if x.endswith(b"\n") else x + b"\n" for x in out[:-1]) + (
        out[-1] if out else b""
    )
