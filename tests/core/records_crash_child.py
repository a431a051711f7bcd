"""Helper for the crash test of avatar's copy of the turns: fork writers that append turns
through `SessionRecords` and SIGKILL them at random moments.

Run as `python -m tests.core.records_crash_child <avatar_home> <runs> <seed>`; prints one
JSON list of `{"id": session id, "written": messages the child saw written}`.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path

from avatar.records import SessionRecords


def child(home: Path, sid: str, out: int, seed: int) -> None:
    rng = random.Random(seed)
    records = SessionRecords(home)
    n = 0
    while True:
        records.turn("codex", sid, f"prompt {n} " + "p" * rng.randint(1, 3000), "", [])
        records.turn(
            "codex", sid, None, f"answer {n + 1} " + "a" * rng.randint(1, 3000), ["Read x"]
        )
        n += 2
        # One write of < PIPE_BUF bytes: the parent sees the whole line or nothing.
        os.write(out, f"W {n}\n".encode())


def main() -> None:
    home, runs, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    results = []
    for run in range(runs):
        sid = f"run-{run:03d}"
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                child(home, sid, w, seed * 1000 + run)
            finally:
                os._exit(0)
        os.close(w)
        time.sleep(rng.uniform(0.002, 0.04))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        with os.fdopen(r, "rb") as pipe:
            lines = pipe.read().decode().splitlines()
        written = max((int(ln.split()[1]) for ln in lines if ln.startswith("W ")), default=0)
        results.append({"id": sid, "written": written})
    sys.stdout.write(json.dumps(results))


if __name__ == "__main__":
    main()
