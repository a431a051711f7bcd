"""Helper for the crash test of avatar's copy of the turns: fork writers that append turns
through `SessionRecords` and SIGKILL them at random moments.

Run as `python -m tests.core.records_crash_child <avatar_home> <runs> <seed>`; prints one
JSON list of `{"id": session id, "written": messages the child saw written}`.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

from avatar.sessions.records import SessionRecords
from tests.support.crash import killed_at_random


def main() -> None:
    home, runs, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

    def child(out: int, run: int) -> None:
        rng = random.Random(seed * 1000 + run)
        records, sid, n = SessionRecords(home), f"run-{run:03d}", 0
        while True:
            records.turn("codex", sid, f"prompt {n} " + "p" * rng.randint(1, 3000), "", [])
            answer = f"answer {n + 1} " + "a" * rng.randint(1, 3000)
            records.turn("codex", sid, None, answer, ["Read x"])
            n += 2
            os.write(out, f"W {n}\n".encode())

    results = []
    for run, lines in enumerate(killed_at_random(runs, seed, child)):
        written = max((int(ln.split()[1]) for ln in lines if ln.startswith("W ")), default=0)
        results.append({"id": f"run-{run:03d}", "written": written})
    sys.stdout.write(json.dumps(results))


if __name__ == "__main__":
    main()
