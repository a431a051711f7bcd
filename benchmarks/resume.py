"""Resuming a 10,000-message native session: wall time and peak memory of one more turn.

`avatar -p native chat --resume ID "hi"` runs against the fake model server (tests/support),
so the whole history is loaded, sent and appended to, as for a user. Baseline: the same
command on a fresh one-turn session, measured in the same run. Peak memory is the child's
peak RSS (`ru_maxrss`), read in a fresh wrapper interpreter so no earlier child counts.

Targets: time is reported (with its ratio to the fresh chat); the memory the history adds
(peak RSS of the resume − peak RSS of the fresh chat) must stay ≤ 10× the session file's size:
the file is parsed into entries and re-encoded as one request, a few copies at most.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, avatar_exe, row

MESSAGES = 10_000
MEMORY_FACTOR = 10.0
#: Runs the command given as arguments and prints its peak RSS in KiB (Linux `ru_maxrss`).
_RSS = (
    "import resource, subprocess, sys\n"
    "out = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "sys.stderr.write(out.stderr)\n"
    "print(out.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    "print(out.stdout)\n"
)


def make_session(avatar_home: Path, cwd: Path, messages: int) -> tuple[str, Path]:
    """A native session of `messages` alternating user/assistant messages; (id, file)."""
    from avatar.native.store.entries import MessageEntry
    from avatar.native.store.manager import SessionManager

    header, writer = SessionManager(avatar_home).create(cwd, model=None)
    try:
        for i in range(messages):
            writer.add(
                MessageEntry(
                    role="user" if i % 2 == 0 else "assistant",
                    text=f"message {i}: look at src/mod{i % 97}.py",
                )
            )
        writer.sync()
    finally:
        writer.close()
    return header.id, writer.path


def chat(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS bytes of `avatar -p native chat ARGS`; raises if it fails."""
    cmd = [sys.executable, "-c", _RSS, avatar_exe(), "-p", "native", "chat", *args]
    start = time.perf_counter()
    out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - start
    code, rss = out.stdout.split("\n", 1)[0].split()
    if code != "0" or "Hello from the fake LLM." not in out.stdout:
        raise RuntimeError(f"avatar chat {args} failed ({code}): {out.stderr.strip()[-300:]}")
    return elapsed, int(rss) * 1024


def measure(messages: int, runs: int) -> dict[str, float]:
    """Median time and peak RSS of resuming a `messages`-message session, and of a fresh chat."""
    sys.path.insert(0, str(ROOT))
    from tests.support.model_server import FakeModelServer

    root = Path(tempfile.mkdtemp(prefix="avatar-bench-resume-"))
    try:
        cwd = root / "proj"
        cwd.mkdir()
        home = root / "avatar-home"
        with FakeModelServer() as server:
            env = {
                "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
                "HOME": str(root),
                "AVATAR_HOME": str(home),
                "AVATAR_CONFIG": str(root / "no-config.yaml"),
                "OPENAI_BASE_URL": server.openai_base_url,
                "OPENAI_API_KEY": "test",
            }
            if os.environ.get("PYTHONPATH"):  # a variant of avatar under measurement
                env["PYTHONPATH"] = os.environ["PYTHONPATH"]
            fresh = [chat(["hi"], env, cwd) for _ in range(runs)]
            resumed = []
            size = 0
            for _ in range(runs):
                # A new copy each run: every resume appends a turn, and the next must not
                # start from a longer file.
                sid, path = make_session(home, cwd, messages)
                size = path.stat().st_size
                resumed.append(chat(["--resume", sid, "hi"], env, cwd))
        return {
            "fresh_time": statistics.median(t for t, _ in fresh),
            "fresh_rss": float(max(m for _, m in fresh)),
            "time": statistics.median(t for t, _ in resumed),
            "rss": float(max(m for _, m in resumed)),
            "size": float(size),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def rows_of(messages: int, r: dict[str, float]) -> list[dict[str, object]]:
    """The rows of one measurement."""
    added = max(0.0, r["rss"] - r["fresh_rss"])
    mb = 1024 * 1024
    label = f"{messages:,}-message session ({r['size'] / mb:.1f} MB)"
    return [
        row(
            'avatar -p native chat "hi", fresh session (baseline)', r["fresh_time"], None, "-", True
        ),
        row(f"chat --resume of a {label}", r["time"], r["fresh_time"], "(reported)", True),
        row("peak RSS, fresh chat (baseline)", r["fresh_rss"] / mb, None, "-", True, unit="MB"),
        row(
            f"peak RSS, chat --resume of a {label}",
            r["rss"] / mb,
            r["fresh_rss"] / mb,
            "(reported)",
            True,
            unit="MB",
        ),
        row(
            "memory the history adds ÷ session file size",
            added / r["size"],
            None,
            f"≤ {MEMORY_FACTOR:.0f}× file size",
            added / r["size"] <= MEMORY_FACTOR,
            unit="× file size",
        ),
    ]


def run(quick: bool) -> list[dict[str, object]]:
    """Resume of a 10,000-message session (quick: one run each, else three)."""
    return rows_of(MESSAGES, measure(MESSAGES, 1 if quick else 3))
