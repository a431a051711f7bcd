"""Who the server works for (`avatar.policy.confined`): a process confined more than the
asker — NoNewPrivs it lacks, a mount namespace of its own, or gone — is refused; a plain child
is not. (The server's refusal through real walls: tests/server/test_walled_peers.py.)"""

from __future__ import annotations

import ctypes
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from avatar.policy.confined import confined_more

_PR_SET_NO_NEW_PRIVS = 38


def _no_new_privs() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


@contextmanager
def child(
    preexec: Callable[[], None] | None = None, wrap: list[str] | None = None
) -> Iterator[int]:
    """A sleeping child process, started with `preexec` (or under the command `wrap`); its pid."""
    proc = subprocess.Popen(
        [*(wrap or []), "sleep", "60"],
        preexec_fn=preexec,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        if wrap:  # the wrapper execs sleep once it has entered the namespace
            for _ in range(200):
                if Path(f"/proc/{proc.pid}/exe").resolve().name == "sleep":
                    break
                time.sleep(0.01)
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_a_plain_child_is_not_confined_more() -> None:
    with child() as pid:
        assert not confined_more(pid)


def test_no_new_privs_marks_a_confined_process() -> None:
    with child(_no_new_privs) as pid:
        assert confined_more(pid)


def test_another_mount_namespace_marks_a_confined_process() -> None:
    # util-linux's unshare: root needs no user namespace for a mount namespace, others do.
    wrap = (
        ["unshare", "--mount"]
        if os.geteuid() == 0
        else ["unshare", "--map-current-user", "--mount"]
    )
    with child(wrap=wrap) as pid:
        assert os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
        assert confined_more(pid)


def test_a_process_that_cannot_be_seen_counts_as_confined() -> None:
    with child() as pid:
        pass
    assert confined_more(pid)  # (gone: its pid may be another process's by now)
    assert confined_more(0)
