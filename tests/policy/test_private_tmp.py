"""A sandbox's private temp dir (`avatar.policy.private_tmp`): made in `$TMPDIR`, the user's
alone; and those of avatars that are gone (their lock free) removed when the next is made,
never one whose avatar lives."""

from __future__ import annotations

import fcntl
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from avatar.policy import private_tmp


def test_made_in_tmpdir_the_users_alone_and_stale_ones_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    gone = tmp_path / "avatar-agent-gone"  # (its avatar was killed: nobody holds its lock)
    gone.mkdir()
    (gone / ".lock").touch()
    (gone / ".blank.d").mkdir(mode=0)
    alive = tmp_path / "avatar-agent-alive"
    alive.mkdir()
    (alive / ".lock").touch()
    held = os.open(alive / ".lock", os.O_RDWR)
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        made, lock = private_tmp.make("agent")
        os.close(lock)
    finally:
        os.close(held)
    assert made.parent == tmp_path and made.name.startswith("avatar-agent-")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    assert (made / "tmp").is_dir() and (made / ".lock").is_file()
    assert not gone.exists() and alive.exists()
    private_tmp.remove(made)
    assert not made.exists()


def test_without_a_usable_tmpdir_it_is_slash_tmp(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("", "relative/dir", "/no/such/dir"):
        monkeypatch.setenv("TMPDIR", value)
        assert private_tmp.temp_root() == Path("/tmp")


def test_once_its_process_started_closing_the_walls_loads_nothing(tmp_path: Path) -> None:
    """What removing the temp dir takes is loaded when the walled process starts
    (`Sandbox.started`), not at its end: a one-shot's end waits for its agent's exit, and
    then for nothing more (a fresh interpreter, so that nothing is loaded by chance)."""
    script = """
import sys
from pathlib import Path
from avatar.policy.sandbox import Sandbox

box = Sandbox("agent", Path(sys.argv[1]))
made = box.tmpdir
box.started()
before = set(sys.modules)
box.close()
print(sorted(set(sys.modules) - before), made.exists())
"""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    ran = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["[]", "False"]
