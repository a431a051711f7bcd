"""The socket's JSON (`avatar.core.quickjson`) reads and writes what `json` does, without its
import: a frame that round-trips through one end must mean the same at the other."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from avatar.core.quickjson import DecodeError, dumps, loads

_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(st.characters(exclude_categories=["Cs"])),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(_values)
def test_what_json_writes_compactly_and_reads(value: object) -> None:
    text = dumps(value)
    assert text == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert loads(text) == json.loads(text)
    assert loads(f" \n{text}\r\n") == value


def test_what_json_cannot_hold_is_written_as_its_str() -> None:
    assert loads(dumps({"path": object.__new__(type("P", (), {"__str__": lambda s: "/x"}))})) == {
        "path": "/x"
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Expecting value (line 1, column 1)"),
        ('{"a": 1,\n  }', "Expecting property name enclosed in double quotes (line 2, column 3)"),
        ('{"a": 1} x', "Extra data (line 1, column 10)"),
        ("[1, 2", "Expecting ',' delimiter (line 1, column 6)"),
    ],
)
def test_text_that_is_not_json_says_what_and_where(text: str, message: str) -> None:
    with pytest.raises(DecodeError) as raised:
        loads(text)
    assert str(raised.value) == message


def test_a_client_reaches_the_socket_without_importing_json() -> None:
    """What `avatar` loads before it asks the server: not json (nor re, enum, typing)."""
    code = "import sys; from avatar.server.client import served; print(sorted(sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert not {"json", "re", "enum", "typing"} & set(eval(loaded))
