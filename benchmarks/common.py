"""Timing helpers shared by the benchmarks."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
#: Seconds a timed command may take before it is killed (and the benchmark fails).
TIMEOUT = 120.0


@contextlib.contextmanager
def scratch(name: str, **extra: str) -> Iterator[tuple[Path, dict[str, str]]]:
    """A project in a fresh temporary home, removed afterwards: (the project, an environment
    whose HOME and AVATAR_HOME are there and whose config is none, with `extra`)."""
    root = Path(tempfile.mkdtemp(prefix=f"avatar-bench-{name}-"))
    try:
        (root / "home").mkdir()
        (root / "proj").mkdir()
        env = {
            **os.environ,
            "HOME": str(root / "home"),
            "AVATAR_HOME": str(root / "avatar-home"),
            "AVATAR_CONFIG": str(root / "no-config.yaml"),
            **extra,
        }
        yield root / "proj", env
    finally:
        shutil.rmtree(root, ignore_errors=True)


def avatar_exe() -> str:
    """The installed `avatar` console script next to this interpreter, or the one named by
    `AVATAR_BENCH_EXE` (to measure another build, e.g. the one before a change, in the same
    run as this one)."""
    return os.environ.get("AVATAR_BENCH_EXE") or str(VENV_BIN / "avatar")


@dataclass(frozen=True)
class Command:
    """A command to time: its argv, and the environment and directory it runs in."""

    argv: Sequence[str]
    env: dict[str, str] | None = None
    cwd: Path | None = None


def interleaved(
    commands: Mapping[str, Command], runs: int, settle: Callable[[], None] | None = None
) -> dict[str, float]:
    """Median wall time in seconds of each command, run in turns (a, b, c, a, b, c, …) so that
    a slow stretch of the machine hits them all alike (output discarded); `settle` runs before
    each command, untimed (e.g. until a server's work in the background is over)."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            if settle is not None:
                settle()
            env = cmd.env or os.environ.copy()
            start = time.perf_counter()
            proc = subprocess.Popen(
                cmd.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                cwd=cmd.cwd,
            )
            # Not `run(timeout=…)`: waiting with a timeout polls the child with sleeps of up
            # to 50 ms, which rounds every time up to the next poll. A timer kills a hung one.
            guard = threading.Timer(TIMEOUT, proc.kill)
            guard.start()
            try:
                code = proc.wait()
            finally:
                guard.cancel()
            times[name].append(time.perf_counter() - start)
            if code:
                raise subprocess.CalledProcessError(code, cmd.argv)
    return {name: statistics.median(t) for name, t in times.items()}


def median_wall(
    cmd: Sequence[str], runs: int, env: dict[str, str] | None = None, cwd: Path | None = None
) -> float:
    """Median wall time in seconds of running `cmd` to completion (output discarded)."""
    return interleaved({"cmd": Command(cmd, env, cwd)}, runs)["cmd"]


def row(
    name: str,
    value: float,
    baseline: float | None,
    target: str,
    ok: bool,
    unit: str = "s",
    ratio: float | None = None,
) -> dict[str, object]:
    """One result row: value, baseline, their ratio, the target and whether it is met.

    `ratio` defaults to value ÷ baseline; throughput rows pass baseline ÷ value instead.
    """
    return {
        "name": name,
        "value": value,
        "unit": unit,
        "baseline": baseline,
        "ratio": ratio if ratio is not None else (value / baseline if baseline else None),
        "target": target,
        "ok": ok,
    }


def measured_fresh(module: str, n: int, quick: bool) -> dict[str, float]:
    """`benchmarks.<module>.measure(n, quick)`, run in a new interpreter (`benchmarks.fresh`)."""
    argv = [sys.executable, "-m", "benchmarks.fresh", module, str(n)]
    out = subprocess.run(
        [*argv, "--quick"] if quick else argv,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,  # `-m` puts it first on the path, as for `python -m benchmarks`
    )
    figures: dict[str, float] = json.loads(out.stdout.splitlines()[-1])
    return figures
