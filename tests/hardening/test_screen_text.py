"""What the REPL's screen takes from an agent cannot take over the terminal or hang it.

A notification's text is an agent's words (a permission question's title): it cannot end
the terminal's OSC sequence early and write one of its own (a title, a hyperlink, a
clipboard write), whatever control characters it holds (C0, ESC, C1's ST and OSC)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from avatar.cli.repl.notify import sequence
from avatar.core.diffs import FileChange, against_disk, locate

HOSTILE = "edit a.py\x07\x1b]52;c;cHduZWQ=\x07\x9c\x9d0;pwned\x1b\\\nnext line"


@pytest.mark.parametrize("how", ["osc9", "osc777"])
def test_a_hostile_title_stays_inside_one_notification(how: str) -> None:
    out = sequence(how, f"avatar: permission asked: {HOSTILE}")  # type: ignore[arg-type]
    assert out.count("\x1b") == 1 and out.startswith("\x1b]")  # only the sequence's own
    assert out.count("\x07") == 1 and out.endswith("\x07")  # ended once, at its end
    assert not any(0x80 <= ord(c) < 0xA0 for c in out)  # no C1 control (ST, OSC)
    assert "\n" not in out
    assert "edit a.py" in out and "next line" in out  # the words kept, as text


def test_the_bell_and_off() -> None:
    assert sequence("bell", HOSTILE) == "\x07"
    assert sequence("off", HOSTILE) == ""


@pytest.mark.timeout(60)
def test_a_fifo_where_an_edit_is_shown_does_not_hang_the_screen(tmp_path: Path) -> None:
    """The agent (inside the walls) can put a FIFO where the file it edits was: the REPL,
    reading the file to number the menu's diff, shows the change unnumbered instead of
    waiting for a writer forever (before: `locate` blocked on the FIFO's open)."""
    os.mkfifo(tmp_path / "calc.py")
    edit = FileChange("calc.py", "total = a + b", "total = a - b")
    assert locate(edit, tmp_path) == edit
    write = FileChange("calc.py", "", "x = 1\n")
    assert against_disk(write, tmp_path) == write
