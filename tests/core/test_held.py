"""The lock file processes take turns by (`avatar.core.fileio.held`): a second holder waits,
a bounded wait ends in `TimeoutError`, a killed holder leaves it free, a FIFO planted at its
path is refused rather than waited on, and a symlink there is refused rather than followed."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from avatar.core.fileio import SpecialFileError, held

HOLD = """
import sys, time
from pathlib import Path
from avatar.core.fileio import held
with held(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_second_holder_waits_for_the_first(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    order: list[str] = []

    def second() -> None:
        with held(lock):
            order.append("second")

    with held(lock):
        waiting = threading.Thread(target=second)
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive()  # still waiting while the first holds it
        order.append("first")
    waiting.join(5)
    assert order == ["first", "second"]
    assert lock.stat().st_mode & 0o777 == 0o600


def test_a_bounded_wait_gets_a_lock_freed_in_time_and_gives_up_on_one_that_is_not(
    tmp_path: Path,
) -> None:
    lock = tmp_path / "lock"
    first = held(lock)
    first.__enter__()
    # Freed while the second waits: it gets the lock (it waits, not fails at once).
    threading.Timer(0.2, first.__exit__, (None, None, None)).start()
    with held(lock, wait=30):
        pass
    # Never freed while the second waits: it gives up, saying why.
    with (
        held(lock),
        pytest.raises(TimeoutError, match="held by another process"),
        held(lock, wait=0.3),
    ):
        pass
    with held(lock, wait=0.3):  # free again once the first is done
        pass


def test_a_killed_holder_leaves_the_lock_free(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(TimeoutError), held(lock, wait=0.2):
            pass
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(10)
        with held(lock, wait=5):
            pass
    finally:
        holder.kill()
        holder.wait()


def test_a_fifo_at_the_locks_path_is_refused_not_waited_on(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    os.mkfifo(lock)
    with pytest.raises(SpecialFileError, match="FIFO"), held(lock, wait=0.2):
        pass


def test_a_symlink_at_the_locks_path_is_refused_and_its_target_never_made(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "nologin"
    target.parent.mkdir()
    lock = tmp_path / "lock"
    lock.symlink_to(target)
    with pytest.raises(OSError) as refused, held(lock, wait=0.2):
        pass
    assert refused.value.errno == errno.ELOOP
    assert not target.exists()


def test_a_fifo_says_what_it_is_in_one_line(tmp_path: Path) -> None:
    error = SpecialFileError(tmp_path / "lock", "a FIFO (named pipe)")
    assert str(error) == f"{tmp_path / 'lock'} is a FIFO (named pipe), not a regular file"
    assert error.strerror == "a FIFO (named pipe), not a regular file"
