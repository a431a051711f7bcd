"""`avatar --help` prints the shipped `avatar/cli/help.txt` without importing click, and only
when that text is byte for byte what click would print; otherwise click renders it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from avatar.cli import helptext

AVATAR = Path(sys.executable).parent / "avatar"  # the installed console script
REGEN = "avatar/cli/help.txt is stale: run `python -m avatar.cli.helptext` and commit it"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "AVATAR_HOME": str(tmp_path / "avatar-home"),
        "AVATAR_CONFIG": str(tmp_path / "no-config.yaml"),
        "LANG": "C.UTF-8",
        **extra,
    }


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL
    )


def _imported(importtime: str) -> set[str]:
    """The modules named in `-X importtime` (PYTHONPROFILEIMPORTTIME) output."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in importtime.splitlines()
        if line.startswith("import time:")
    }


def test_the_shipped_help_is_what_click_renders_at_80_columns() -> None:
    shipped = helptext.shipped_text()
    assert shipped == helptext.rendered(80), REGEN
    assert shipped.isascii(), "help.txt is served only when it is ASCII: keep the help ASCII"


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_installed_avatar_prints_it_without_importing_click(flag: str, tmp_path: Path) -> None:
    out = _run([str(AVATAR), flag], _env(tmp_path, COLUMNS="80", PYTHONPROFILEIMPORTTIME="1"))
    assert out.returncode == 0, out.stderr
    assert out.stdout == helptext.rendered(80)
    imported = _imported(out.stderr)
    assert "avatar.cli.helptext" in imported  # the import log is there and names the fast path
    assert not {m for m in imported if m == "click" or m.startswith("click.")}
    assert "avatar.cli.commands" not in imported


@pytest.mark.parametrize("columns", ["60", "52", "79"])
def test_other_widths_fall_back_to_click(columns: str, tmp_path: Path) -> None:
    expected = helptext.rendered(int(columns))
    if columns != "79":
        assert expected != helptext.rendered(80)  # the width really changes the text
    out = _run(
        [str(AVATAR), "--help"], _env(tmp_path, COLUMNS=columns, PYTHONPROFILEIMPORTTIME="1")
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == expected
    assert "click" in _imported(out.stderr)


@pytest.mark.parametrize("columns", [60, 80, 200])
def test_rendered_is_what_the_click_path_prints(columns: int, tmp_path: Path) -> None:
    """The reference itself: `rendered` equals the output of click's own `--help` run."""
    code = "from avatar.cli.commands import run; run(['--help'])"
    out = _run([sys.executable, "-c", code], _env(tmp_path, COLUMNS=str(columns)))
    assert out.returncode == 0, out.stderr
    assert out.stdout == helptext.rendered(columns)


def test_avatar_help_exits_0_when_stdout_is_not_a_terminal(tmp_path: Path) -> None:
    """No $COLUMNS and no terminal: click's width is 80 columns', so the shipped text."""
    out = _run([str(AVATAR), "--help"], _env(tmp_path))
    assert out.returncode == 0, out.stderr
    assert out.stdout == helptext.shipped_text()
    assert out.stderr == ""


@pytest.mark.parametrize("value", [None, "80", "81", "200", "79", "60", "1", "0", "-3", "x", ""])
def test_terminal_columns_and_width_are_click_s(
    value: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import click

    if value is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", value)
    assert helptext.terminal_columns() == shutil.get_terminal_size().columns
    assert helptext.help_width(helptext.terminal_columns()) == click.HelpFormatter().width


def test_shell_completion_and_translations_go_to_click(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(sys, "base_prefix", str(tmp_path))
    assert helptext.shipped_help() == helptext.shipped_text()
    monkeypatch.setenv("_AVATAR_COMPLETE", "bash_complete")
    assert helptext.shipped_help() is None
    monkeypatch.delenv("_AVATAR_COMPLETE")
    catalog = tmp_path / "share" / "locale" / "de_DE" / "LC_MESSAGES" / "messages.mo"
    catalog.parent.mkdir(parents=True)
    catalog.write_bytes(b"")
    assert helptext.shipped_help() is None


@pytest.mark.parametrize(("cols", "rendered_at"), [(120, 80), (60, 60)])
def test_in_a_terminal_the_width_is_the_terminal_s(
    cols: int, rendered_at: int, tmp_path: Path
) -> None:
    pexpect = pytest.importorskip("pexpect")
    env = _env(tmp_path)
    child = pexpect.spawn(
        str(AVATAR), ["--help"], env=env, dimensions=(24, cols), encoding="utf-8", timeout=60
    )
    output = child.read()
    child.close()
    assert child.exitstatus == 0
    assert output.replace("\r\n", "\n") == helptext.rendered(rendered_at)
