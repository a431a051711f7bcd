"""The shipped provider table: `providers.toml` is the truth; a JSON copy in avatar's cache
spares every command the TOML parser while the file is unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from avatar.providers import registry as providers

ENTRY = '[toy]\ntransport = "acp"\ncommand = ["toy-agent"]\ninstall_hint = "{hint}"\n'


@pytest.fixture
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "providers.toml"
    data.write_text(ENTRY.format(hint="first"))
    monkeypatch.setenv("AVATAR_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(providers, "DATA_FILE", data)
    providers.shipped.cache_clear()
    yield data
    providers.shipped.cache_clear()


def copy_of(table: Path) -> Path:
    """The cache's copy of `table` (the one JSON file there)."""
    (copy,) = (table.parent / "home" / "cache").glob("providers*.json")
    return copy


def test_the_copy_follows_the_file(table: Path) -> None:
    assert providers.shipped()["toy"].install_hint == "first"
    assert json.loads(copy_of(table).read_text())["table"]["toy"]["command"] == ["toy-agent"]
    table.write_text(ENTRY.format(hint="second, a little longer"))
    providers.shipped.cache_clear()
    assert providers.shipped()["toy"].install_hint == "second, a little longer"


def test_a_damaged_copy_or_a_home_that_cannot_be_written_changes_nothing(
    table: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    providers.shipped()
    copy_of(table).write_text('{"key": [1, 2')
    providers.shipped.cache_clear()
    assert providers.shipped()["toy"].install_hint == "first"
    blocked = table.parent / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("AVATAR_HOME", str(blocked / "home"))  # no directory can be made there
    providers.shipped.cache_clear()
    assert providers.shipped()["toy"].install_hint == "first"


def test_two_installations_sharing_a_home_each_keep_their_copy(
    table: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkout and a release on one home, run in turns: once each has run, neither parses
    its TOML again (one copy for both was made again at every turn)."""
    other = table.parent / "other" / "providers.toml"
    other.parent.mkdir()
    other.write_text(ENTRY.format(hint="other"))
    hints = []
    for data in (table, other):
        monkeypatch.setattr(providers, "DATA_FILE", data)
        providers.shipped.cache_clear()
        hints.append(providers.shipped()["toy"].install_hint)

    def no_parse(*args: object) -> None:
        raise AssertionError("the TOML was parsed again")

    monkeypatch.setattr(tomllib, "load", no_parse)
    for data in (table, other, table):
        monkeypatch.setattr(providers, "DATA_FILE", data)
        providers.shipped.cache_clear()
        hints.append(providers.shipped()["toy"].install_hint)
    assert hints == ["first", "other", "first", "other", "first"]


def test_a_listing_after_the_first_command_loads_no_toml_parser(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "AVATAR_HOME": str(tmp_path / "h")}
    code = (
        "import sys\nfrom avatar.cli import main\n"
        "try:\n    main(['session', 'list'])\nexcept SystemExit:\n    pass\n"
        "print('tomllib' in sys.modules)\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], env=env, cwd=tmp_path, text=True, capture_output=True
        )
        for _ in range(2)
    ]
    assert [r.stdout.strip() for r in runs] == ["True", "False"], runs[-1].stderr
