"""Queueing on a native session another process holds: its file lock is the queue.

A session file is locked (`fcntl.flock`, exclusive) by the one process that has it open
(`SessionWriter`). A second `chat --resume` or REPL on the same session does not fail: it
polls the lock, says once on stderr who holds it, and opens the session as soon as the holder
lets go — reading the file only then, so its turn runs on top of everything the first wrote.
With `wait=False` (`--no-wait`) the first refusal is the answer.

Polling (not a blocking `flock`) keeps the event loop free, so Ctrl-C cancels the wait.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from avatar.native.store.writer import SessionBusyError

T = TypeVar("T")

#: Seconds between two looks at the lock; the wait costs nothing noticeable at this rate.
POLL_SECONDS = 0.1


def lock_holder(path: Path) -> int | None:
    """The pid holding the flock on `path`, from `/proc/locks` (Linux); None if unknown."""
    try:
        st = path.stat()
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; blocked waiters carry "->".
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in lines:
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == device:
            try:
                return int(fields[4])
            except ValueError:
                return None
    return None


def waiting_notice(session_id: str, path: Path) -> str:
    """The one stderr notice shown while waiting for `session_id`."""
    pid = lock_holder(path)
    held = f"held by pid {pid}" if pid is not None else "held by another avatar process"
    return f"waiting for session {session_id} ({held}); Ctrl-C to give up"


async def open_when_free(
    session_id: str,
    path: Path,
    opener: Callable[[], T],
    *,
    wait: bool = True,
    notify: Callable[[str], None] = lambda message: None,
    poll: float = POLL_SECONDS,
) -> T:
    """`opener()` (which takes the session's lock), retried until the lock is free.

    `opener` raises `SessionBusyError` while another process holds the session; then, with
    `wait`, `notify` gets one notice and the call polls; without it the error propagates.
    Cancelling the awaiting task gives up the wait.
    """
    told = False
    while True:
        try:
            return opener()
        except SessionBusyError:
            if not wait:
                raise SessionBusyError(
                    f"session {session_id} is open in another avatar process "
                    "(wait for it without --no-wait)"
                ) from None
            if not told:
                notify(waiting_notice(session_id, path))
                told = True
        await asyncio.sleep(poll)
