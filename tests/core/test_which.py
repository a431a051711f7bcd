"""`avatar.core.which` answers as `shutil.which` does: over search paths of directories that
hold the program as an executable, a plain file, a directory or a broken link, or not at all,
given in any order, repeated, empty or missing, and for names with a `/`."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from avatar.core.which import which

KINDS = ["executable", "plain", "directory", "broken link", "absent"]


def _make(root: Path, kinds: list[str]) -> list[str]:
    dirs = []
    for i, kind in enumerate(kinds):
        d = root / f"d{i}"
        d.mkdir()
        target = d / "prog"
        if kind == "executable":
            target.write_text("#!/bin/sh\n")
            target.chmod(0o755)
        elif kind == "plain":
            target.write_text("data\n")
        elif kind == "directory":
            target.mkdir()
        elif kind == "broken link":
            target.symlink_to(d / "nowhere")
        dirs.append(str(d))
    return dirs


@settings(max_examples=60, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(KINDS), min_size=0, max_size=5),
    order=st.lists(st.integers(min_value=-1, max_value=4), max_size=8),
    name=st.sampled_from(["prog", "other", "d0/prog", "/d0/prog"]),
)
def test_it_finds_what_shutil_finds(kinds: list[str], order: list[int], name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dirs = _make(root, kinds)
        # -1 is an empty entry; indexes past the made directories name missing ones
        entries = [
            "" if i < 0 else (dirs[i] if i < len(dirs) else str(root / "gone")) for i in order
        ]
        path = os.pathsep.join(entries)
        program = str(root) + name if name.startswith("/") else name
        assert which(program, path) == shutil.which(program, path=path)


@pytest.mark.parametrize("path", [None, ""])
def test_without_a_path_it_reads_the_environment_as_shutil_does(
    path: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for environ_path in [None, "", "/usr/bin:/bin"]:
        if environ_path is None:
            monkeypatch.delenv("PATH", raising=False)
        else:
            monkeypatch.setenv("PATH", environ_path)
        assert which("sh", path) == shutil.which("sh", path=path), environ_path
