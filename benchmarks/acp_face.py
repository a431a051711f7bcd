"""`avatar acp` start-up (docs/design.md §12): from starting the process to its answer of
`initialize`, as the tests' stdlib ACP client sees it (`tests/support/acp_client.py`), against
the same client starting the least ACP agent Python can be (`benchmarks/acp_stub.py`: Python's
own start, then one line read and answered with `json`), and `python -c pass`, in turns in the
same run (each round in a shuffled order). Target: ≤ 1.3× the stub agent, i.e. `python -c
pass` plus the client's and the protocol's own start. Also reported: a session opened
(`session/new` answered, the native agent behind it: no agent process to wait for).
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import ROOT, avatar_exe, row, scratch

#: The target: `avatar acp`'s `initialize` answered within this many times the stub's.
TARGET = 1.3


def answered(argv: list[str], env: dict[str, str], cwd: Path, session: bool = False) -> float:
    """Seconds from starting `argv` to its answer of `initialize` (with `session`: of a
    `session/new` after it)."""
    from tests.support.acp_client import AcpClient

    started = time.perf_counter()
    with AcpClient(argv, env=env, cwd=cwd) as client:
        client.initialize()
        if session:
            client.request("session/new", {"cwd": str(cwd), "mcpServers": []})
        return time.perf_counter() - started


def python_pass() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


def run(quick: bool) -> list[dict[str, object]]:
    """Time `avatar acp` to its `initialize` answer, and its baselines, in shuffled turns."""
    runs = 11 if quick else 41
    # (OPENAI_API_KEY: the native agent is chosen; it calls nobody here)
    with scratch("acp-face", OPENAI_API_KEY="bench", PYTHONPATH=str(ROOT)) as (proj, env):
        stub = [sys.executable, str(ROOT / "benchmarks" / "acp_stub.py")]
        avatar = [avatar_exe(), "acp"]
        timed = {
            "base": python_pass,
            "stub": lambda: answered(stub, env, proj),
            "avatar": lambda: answered(avatar, env, proj),
        }
        times: dict[str, list[float]] = {name: [] for name in timed}
        for _ in range(runs):
            names = list(timed)
            random.shuffle(names)
            for name in names:
                times[name].append(timed[name]())
        session = statistics.median(
            answered(avatar, env, proj, session=True) for _ in range(3 if quick else 7)
        )
    t = {name: statistics.median(values) for name, values in times.items()}
    ratio = t["avatar"] / t["stub"]
    return [
        row("python -c pass (baseline)", t["base"], None, "-", True),
        row(
            "stdlib ACP agent: start → initialize answered",
            t["stub"],
            t["base"],
            "(the baseline below)",
            True,
        ),
        row(
            "avatar acp: start → initialize answered",
            t["avatar"],
            t["stub"],
            f"≤ {TARGET}× the stdlib agent",
            ratio <= TARGET,
        ),
        row(
            "avatar acp: start → session/new answered (native)",
            session,
            t["stub"],
            "(reported)",
            True,
        ),
    ]
