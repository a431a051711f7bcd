"""Helper for the crash-safety test: fork writers and SIGKILL them at random moments.

Run as `python -m tests.native.crash_child <avatar_home> <runs> <seed>`; prints one JSON
list of `{"id": session id, "flushed": [entry ids the child saw flushed]}`. The forking
happens here, in a fresh single-threaded process, so each run costs a fork, not an
interpreter start.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path

from avatar.native.entries import MessageEntry
from avatar.native.store import SessionManager


def child(manager: SessionManager, cwd: Path, out: int, seed: int) -> None:
    rng = random.Random(seed)
    header, writer = manager.create(cwd, model="openai/gpt-4o")
    os.write(out, f"S {header.id}\n".encode())
    while True:
        ids = []
        for _ in range(rng.randint(1, 20)):
            entry = MessageEntry(role="user", text="x" * rng.randint(1, 4000))
            writer.add(entry)
            ids.append(entry.id)
        writer.flush()
        # One write of < PIPE_BUF bytes: the parent sees the whole line or nothing.
        os.write(out, ("F " + " ".join(ids) + "\n").encode())


def main() -> None:
    home, runs, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    manager = SessionManager(home)
    cwd = home / "project"
    # Build the (lazily built) entry validators once here, as a running agent has them, so
    # each forked writer starts appending at once instead of spending its life on that.
    _, warm = manager.create(home / "warm-up", model="openai/gpt-4o")
    warm.add(MessageEntry(role="user", text="warm-up"))
    warm.close()
    results = []
    for run in range(runs):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                child(manager, cwd, w, seed * 1000 + run)
            finally:
                os._exit(0)
        os.close(w)
        time.sleep(rng.uniform(0.002, 0.04))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        data = b""
        while chunk := os.read(r, 65536):
            data += chunk
        os.close(r)
        sid = None
        flushed: list[str] = []
        for line in data.split(b"\n")[:-1]:  # the last piece has no newline: not reported
            kind, _, rest = line.decode().partition(" ")
            if kind == "S":
                sid = rest
            elif kind == "F":
                flushed.extend(rest.split())
        results.append({"id": sid, "flushed": flushed})
    print(json.dumps(results))


if __name__ == "__main__":
    main()
