"""What the REPL's screen takes from an agent cannot hang it: the file a permission question's
diff is drawn against is read without blocking, whatever the agent put at its path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from avatar.core.diffs import FileChange, against_disk, locate


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
