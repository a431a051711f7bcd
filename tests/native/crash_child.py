"""Helper for the crash-safety test: fork writers and SIGKILL them at random moments.

Run as `python -m tests.native.crash_child <avatar_home> <runs> <seed>`; prints one JSON
list of `{"id": session id, "flushed": [entry ids the child saw flushed]}`.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

from avatar.native.store.entries import MessageEntry
from avatar.native.store.manager import SessionManager
from tests.support.crash import killed_at_random


def main() -> None:
    home, runs, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    manager = SessionManager(home)
    cwd = home / "project"
    # Build the (lazily built) entry validators once here, as a running agent has them, so
    # each forked writer starts appending at once instead of spending its life on that.
    _, warm = manager.create(home / "warm-up", model="openai/gpt-4o")
    warm.add(MessageEntry(role="user", text="warm-up"))
    warm.close()

    def child(out: int, run: int) -> None:
        rng = random.Random(seed * 1000 + run)
        header, writer = manager.create(cwd, model="openai/gpt-4o")
        os.write(out, f"S {header.id}\n".encode())
        while True:
            ids = []
            for _ in range(rng.randint(1, 20)):
                entry = MessageEntry(role="user", text="x" * rng.randint(1, 4000))
                writer.add(entry)
                ids.append(entry.id)
            writer.flush()
            os.write(out, ("F " + " ".join(ids) + "\n").encode())

    results = []
    for lines in killed_at_random(runs, seed, child):
        sid = None
        flushed: list[str] = []
        for line in lines:
            kind, _, rest = line.partition(" ")
            if kind == "S":
                sid = rest
            elif kind == "F":
                flushed.extend(rest.split())
        results.append({"id": sid, "flushed": flushed})
    print(json.dumps(results))


if __name__ == "__main__":
    main()
