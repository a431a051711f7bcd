"""A file that cannot be read, in any store, is skipped with one warning (issue 30): a symlink
loop made `session search` and `session list` fail for every store (`avatar: cannot use …: Too
many levels of symbolic links`), a FIFO in the native store hung them, and a symlink to
nothing was dropped without a word. Now each command still lists and finds every other
session, and says once which file it skipped and why."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.library.helpers import Library, make_library

SID = "11111111-1111-4111-8111-111111111111"


def _spot(lib: Library, store: str) -> Path:
    """Where a session file of `store` would lie, named as that store names them."""
    home = lib.synth.home
    if store == "claude":
        return lib.claude_dir() / f"{SID}.jsonl"
    if store == "codex":
        day = next((home / ".codex" / "sessions").rglob("*.jsonl")).parent
        return day / f"rollout-2026-01-01T00-00-00-{SID}.jsonl"
    if store == "gemini":
        return (
            next((home / ".gemini" / "tmp").rglob("chats"))
            / f"session-2026-01-01T00-00-{SID[:8]}.jsonl"
        )
    return next(lib.avatar_home.rglob("*.jsonl")).parent / "01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl"


KINDS: dict[str, Callable[[Path], None]] = {
    "symlink loop": lambda p: p.symlink_to(p.name),
    "FIFO": lambda p: os.mkfifo(p),
    "symlink to nothing": lambda p: p.symlink_to("nowhere.jsonl"),
}


@pytest.fixture
def lib(tmp_path: Path) -> Library:
    lib = make_library(tmp_path, n=1)
    lib.claude_session("please refactor the quokka parser")
    lib.native_session("the wombat migration plan")
    return lib


def _avatar(lib: Library, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **lib.synth.env,
        "AVATAR_HOME": str(lib.avatar_home),
        "AVATAR_CONFIG": str(lib.root / "no-config.yaml"),
        "AVATAR_NO_SERVER": "1",
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
    }
    return subprocess.run(
        ["avatar", *args], env=env, cwd=lib.cwd, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("store", ["claude", "codex", "gemini", "native"])
def test_an_unreadable_file_is_skipped_with_one_warning(
    lib: Library, store: str, kind: str
) -> None:
    bad = _spot(lib, store)
    KINDS[kind](bad)
    for args in (("session", "search", "quokka"), ("session", "search", "wombat"),
                 ("session", "list")):  # fmt: skip
        done = _avatar(lib, *args)
        assert done.returncode == 0, done.stderr
        assert ("quokka" in done.stdout) if "quokka" in args else True
        assert ("wombat" in done.stdout) if args[-1] != "quokka" else True
        warned = [line for line in done.stderr.splitlines() if str(bad) in line]
        assert len(warned) == 1 and warned[0].startswith("warning: "), done.stderr
        assert "skipped" in warned[0]
