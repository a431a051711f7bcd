"""Fuzzing the config loader: any file is settings or one clear `config error` — no traceback.

Arbitrary text, arbitrary YAML documents, and the documented example with one value replaced
by an arbitrary one all go through `load_file`/`load_config`, the path `avatar` takes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]
from hypothesis import given
from hypothesis import strategies as st

from avatar.core.config import load_file
from avatar.core.errors import ConfigError
from avatar.engine.config_layers import load_config
from tests.hardening.fuzzing import JSON, _paths, _replace

EXAMPLE = Path(__file__).parents[2] / "examples" / "avatar.example.yaml"


def _load(path: Path, text: str | bytes) -> None:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    for load in (lambda: load_file(path), lambda: load_config(path.parent, path).settings):
        try:
            load()
        except ConfigError as e:
            message = str(e)
            assert message.startswith("config error: ") and "\n" not in message, message


@given(text=st.text(max_size=300) | st.binary(max_size=300))
def test_fuzz_config_arbitrary_text(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    _load(tmp_path_factory.mktemp("cfg") / "config.yaml", text)


@given(doc=JSON)
def test_fuzz_config_arbitrary_yaml(tmp_path_factory: pytest.TempPathFactory, doc: Any) -> None:
    _load(tmp_path_factory.mktemp("cfg") / "config.yaml", yaml.safe_dump(doc))


@given(data=st.data())
def test_fuzz_config_example_with_one_bad_value(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    doc = yaml.safe_load(EXAMPLE.read_text())
    path = data.draw(st.sampled_from(_paths(doc)[1:]))
    doc = _replace(doc, path, data.draw(JSON))
    _load(tmp_path_factory.mktemp("cfg") / "config.yaml", yaml.safe_dump(doc))


@pytest.mark.parametrize(
    "text",
    [
        "a: &a [*a, *a]\n",  # a recursive alias
        "x: " + "[" * 2000 + "]" * 2000 + "\n",  # nesting deeper than the recursion limit
        "? [a, b]\n: c\n",  # a key that is not a string
        "lol: &l0 [x, x]\n"
        + "".join(f"l{i}: &l{i} [*l{i - 1}, *l{i - 1}, *l{i - 1}]\n" for i in range(1, 12)),
        "provider: native\nprovider: claude\n",
    ],
)
def test_hostile_yaml_is_one_clear_error(tmp_path: Path, text: str) -> None:
    _load(tmp_path / "config.yaml", text)
