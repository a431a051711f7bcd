"""Disk trouble: `$AVATAR_HOME` read-only, a small filesystem filling up mid-turn, or full
before a new session's first line.

Each is one clear `avatar:` line and exit 1; no entry written before is damaged, and the
next run (with room again) lists and resumes the session. The filesystems are real tmpfs
mounts when this process may mount (root in CI containers); otherwise the same failures are
made with a read-only directory mode and `RLIMIT_FSIZE` (EFBIG instead of ENOSPC).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.hardening.support import json_lines, message_texts, session_file
from tests.support.drive import avatar
from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer, Reply


def _mount(target: Path, options: str) -> bool:
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


class Disk:
    """An `$AVATAR_HOME` on a filesystem a test can make read-only or full."""

    def __init__(self, root: Path) -> None:
        self.path = root / "avatar-home"
        self.path.mkdir()
        self.mounted = _mount(self.path, "size=64k,mode=0700")
        self.fsize: int | None = None  # the fallback's file size limit, when not mounted

    def read_only(self) -> None:
        """No more writes (a read-only remount, else a read-only directory mode)."""
        if self.mounted:
            subprocess.run(["mount", "-o", "remount,ro", str(self.path)], check=True)
        else:
            for d in [self.path, *[p for p in self.path.rglob("*") if p.is_dir()]]:
                d.chmod(0o555)

    def small(self) -> None:
        """About 64 KiB left (the tmpfs size; the fallback limits each file instead)."""
        if not self.mounted:
            self.fsize = 64 * 1024

    def full(self) -> None:
        """No room left at all (the tmpfs filled with a file; the fallback limits each file
        to nothing)."""
        if not self.mounted:
            self.fsize = 0
            return
        fd = os.open(self.path / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass  # full
        finally:
            os.close(fd)

    def roomy(self) -> None:
        """Room again: a bigger filesystem, read-write."""
        if self.mounted:
            subprocess.run(["mount", "-o", "remount,rw,size=4m", str(self.path)], check=True)
            (self.path / "filler").unlink(missing_ok=True)
        else:
            self.fsize = None
            for d in [self.path, *[p for p in self.path.rglob("*") if p.is_dir()]]:
                d.chmod(0o755)

    def preexec(self) -> Callable[[], None] | None:
        """What the child runs before exec: the fallback's file size limit, if any."""
        limit = self.fsize
        if limit is None:
            return None

        def apply() -> None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, not a killed process
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        return apply

    def close(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], check=False)


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Disk]:
    d = Disk(tmp_path)
    try:
        yield d
    finally:
        d.close()


def _run(
    disk: Disk, env: dict[str, str], cwd: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    return avatar(env, cwd, *args, preexec=disk.preexec())


def _errors(stderr: str) -> list[str]:
    assert "Traceback" not in stderr
    return [line for line in stderr.splitlines() if line.startswith("avatar: ")]


def test_read_only_avatar_home_is_one_clear_error(
    disk: Disk, agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    env = avatar_env(agent_home, avatar_home=disk.path)
    cwd = agent_home.workdir
    model_server.chat.append(Reply.text("kept answer"))
    first = _run(disk, env, cwd, "-p", "native", "chat", "-s", "kept-one", "keep this")
    assert first.returncode == 0, first.stderr
    before = session_file(env, "kept-one").read_bytes()
    disk.read_only()
    for args in (
        ("-p", "native", "chat", "a new one"),
        ("-p", "native", "chat", "--resume", "kept-one", "more"),
    ):
        out = _run(disk, env, cwd, *args)
        assert out.returncode == 1, out.stderr
        errors = _errors(out.stderr)
        assert len(errors) == 1 and errors[0].startswith("avatar: cannot write "), out.stderr
        assert errors[0].endswith(("Read-only file system", "Permission denied")), errors
    listed = _run(disk, env, cwd, "session", "list", "--provider", "native", "--json")
    assert listed.returncode == 0, listed.stderr  # reading still works
    assert [r["id"] for r in json.loads(listed.stdout)] == ["kept-one"]
    disk.roomy()
    assert session_file(env, "kept-one").read_bytes() == before


def test_disk_filling_mid_turn_keeps_every_earlier_entry(
    disk: Disk, agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    env = avatar_env(agent_home, avatar_home=disk.path)
    cwd = agent_home.workdir
    disk.small()
    model_server.chat.append(Reply.text("short answer"))
    first = _run(disk, env, cwd, "-p", "native", "chat", "-s", "full-one", "first turn")
    assert first.returncode == 0, first.stderr
    path = session_file(env, "full-one")
    before = path.read_bytes()
    model_server.chat.append(Reply.text("x" * 200_000))  # more than the disk has left
    full = _run(disk, env, cwd, "-p", "native", "chat", "--resume", "full-one", "a big one")
    assert full.returncode == 1
    errors = _errors(full.stderr)
    assert len(errors) == 1, full.stderr
    assert errors[0].startswith("avatar: could not save the session: ")
    assert errors[0].endswith(("No space left on device", "File too large")), errors
    data = path.read_bytes()
    assert data.startswith(before)  # nothing written before is touched
    json_lines(path)  # and no torn line: every line is whole JSON
    disk.roomy()
    model_server.chat.append(Reply.text("room again"))
    again = _run(disk, env, cwd, "-p", "native", "chat", "--resume", "full-one", "still there?")
    assert again.returncode == 0, again.stderr
    assert "warning" not in again.stderr  # nothing torn to skip
    texts = [t for _, t in message_texts(path)]
    assert texts[:2] == ["first turn", "short answer"]
    assert texts[-2:] == ["still there?", "room again"]
    listed = _run(disk, env, cwd, "session", "list", "--provider", "native", "--json")
    rows = json.loads(listed.stdout)
    assert [(r["id"], r["messages"]) for r in rows] == [("full-one", len(texts))]
    assert os.path.getsize(path) == len(path.read_bytes())


def test_a_full_disk_leaves_no_empty_session_file(
    disk: Disk, agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    """A new session on a full disk is one clear error, and no session file is left behind
    empty (it listed as an unreadable session, and its id could not be taken again); the
    next run, with room, starts and lists cleanly (issue 30)."""
    env = avatar_env(agent_home, avatar_home=disk.path)
    cwd = agent_home.workdir
    model_server.chat.append(Reply.text("an answer"))
    first = _run(disk, env, cwd, "-p", "native", "chat", "-s", "kept-one", "first")
    assert first.returncode == 0, first.stderr
    disk.full()
    full = _run(disk, env, cwd, "-p", "native", "chat", "-s", "new-one", "a new one")
    assert full.returncode == 1
    files = {p.name: p.stat().st_size for p in disk.path.glob("sessions/*/*.jsonl")}
    assert 0 not in files.values(), files
    [error] = _errors(full.stderr)
    assert error.startswith("avatar: cannot write "), error
    disk.roomy()
    listed = _run(disk, env, cwd, "session", "list", "--provider", "native", "--json")
    assert listed.returncode == 0 and "warning" not in listed.stderr, listed.stderr
    assert [r["id"] for r in json.loads(listed.stdout)] == ["kept-one"]
    model_server.chat.append(Reply.text("room again"))
    again = _run(disk, env, cwd, "-p", "native", "chat", "-s", "new-one", "once more")
    assert again.returncode == 0, again.stderr
