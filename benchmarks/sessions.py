"""Session listing over synthetic stores: 100 → 1,000 (→ 10,000) sessions per provider.

The sessions are byte copies of the real Claude Code, codex and Gemini CLI files in
tests/fixtures/provider-stores with fresh ids (tests/sessions/synth.py). Measured:

- the stores' `list()` with no cache (first listing ever) and with the `$AVATAR_HOME/cache`
  listing cache in place (every later listing);
- `avatar session list --all --json` end to end, first run and warm median, with every agent
  program on PATH replaced by a stub that records being started (none may start);
- `avatar session show FULL_ID` of a codex session (the deepest store to walk), with no
  listing cache: the id names the file, so it must take within 2× of the same at 100
  sessions per provider (it walked every store, 5–6 s at 10,000 per provider).

The baseline of each size series is the same measurement at 100 sessions per provider, so the
ratio is the growth; the CLI rows also show the CLI on empty stores (interpreter, imports and
output: the floor no listing can go below). Target: under 0.5 s at 1,000 sessions per provider.

Growth rows divide the time at 10× the sessions by the time at the smaller size: a first
listing must grow linearly or better (ratio ≤ 11× per 10× sessions, 10% for timing noise), a
cached one sub-linearly (ratio < 10×).
"""

from __future__ import annotations

import itertools
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.common import avatar_exe, median_wall, row

TARGET = 0.5
#: `session show FULL_ID` at any size, against the same at 100 sessions per provider.
SHOW_GROWTH = 2.0
AGENT_PROGRAMS = ("claude", "codex-acp", "gemini", "claude-agent-acp")


def _stores(env: dict[str, str], avatar_home: Path) -> list[object]:
    from avatar.sessions.claude import ClaudeStore
    from avatar.sessions.codex import CodexStore
    from avatar.sessions.gemini import GeminiStore

    return [
        ClaudeStore("claude", env, avatar_home),
        CodexStore("codex", env, avatar_home),
        GeminiStore("gemini", env, avatar_home),
    ]


def _list_all(env: dict[str, str], avatar_home: Path, cwd: Path, expect: int) -> float:
    start = time.perf_counter()
    found = sum(len(store.list(cwd)) for store in _stores(env, avatar_home))  # type: ignore[attr-defined,misc]
    elapsed = time.perf_counter() - start
    if found != expect:
        raise RuntimeError(f"listed {found} sessions, expected {expect}")
    return elapsed


def cli_env(root: Path, synth_env: dict[str, str], marks: Path) -> dict[str, str]:
    shadow = root / "shadow-bin"
    shadow.mkdir(exist_ok=True)
    for name in AGENT_PROGRAMS:
        exe = shadow / name
        exe.write_text(f'#!/bin/sh\necho "{name}" >> "{marks}"\nexit 1\n')
        exe.chmod(0o755)
    keep = {k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "USER", "TERM")}
    return {
        **keep,
        **synth_env,
        "PATH": f"{shadow}:{Path(avatar_exe()).parent}:/usr/bin:/bin",
        "AVATAR_HOME": str(root / "avatar-home-cli"),
        "AVATAR_CONFIG": str(root / "no-config.yaml"),
    }


def _cli(env: dict[str, str], cwd: Path, runs: int = 1) -> float:
    """`avatar session list --all --json --limit 0`: median wall time of `runs`."""
    listing = [avatar_exe(), "session", "list", "--all", "--json", "--limit", "0"]
    return median_wall(listing, runs, env, cwd)


def cli_floor(quick: bool) -> float:
    """`avatar session list --all` with no sessions anywhere."""
    root = Path(tempfile.mkdtemp(prefix="avatar-bench-sessions-empty-"))
    try:
        (root / "proj").mkdir()
        (root / "home").mkdir()
        env = cli_env(root, {"HOME": str(root / "home")}, root / "agents-started")
        _cli(env, root / "proj")
        return _cli(env, root / "proj", 3 if quick else 7)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _show(root: Path, synth_env: dict[str, str], cwd: Path, runs: int) -> float:
    """`avatar session show FULL_ID` of the last codex rollout, in an $AVATAR_HOME of its
    own (no listing cache): median wall time of `runs`."""
    rollout = max((Path(synth_env["CODEX_HOME"]) / "sessions").rglob("rollout-*.jsonl"))
    env = {
        **cli_env(root, synth_env, root / "agents-started"),
        "AVATAR_HOME": str(root / "ah-show"),
    }
    return median_wall([avatar_exe(), "session", "show", rollout.name[-42:-6]], runs, env, cwd)


def measure(n: int, quick: bool) -> dict[str, float]:
    """Times of listing `n` synthetic sessions per provider (in-process and through the CLI)."""
    from tests.sessions.synth import populate

    root = Path(tempfile.mkdtemp(prefix="avatar-bench-sessions-"))
    try:
        cwd = root / "proj"
        cwd.mkdir()
        synth = populate(root, n, cwd=str(cwd))
        expect = 3 * n
        cold = []
        # Small sizes take milliseconds: --quick keeps the repeats that make them steady.
        for i in range(3):
            cold.append(_list_all(synth.env, root / f"avatar-home-cold-{i}", cwd, expect))
        warm_home = root / "avatar-home-warm"
        _list_all(synth.env, warm_home, cwd, expect)
        warm = [_list_all(synth.env, warm_home, cwd, expect) for _ in range(7)]
        show = _show(root, synth.env, cwd, 3 if quick else 7)
        marks = root / "agents-started"
        env = cli_env(root, synth.env, marks)
        cli_first = _cli(env, cwd)
        cli_warm = _cli(env, cwd, 3 if quick else 7)
        started = len(marks.read_text().splitlines()) if marks.exists() else 0
        return {
            "cold": statistics.median(cold),
            "warm": statistics.median(warm),
            "cli_first": cli_first,
            "cli_warm": cli_warm,
            "show": show,
            "started": float(started),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(quick: bool) -> list[dict[str, object]]:
    """Rows for 100 and 1,000 sessions per provider (and 10,000 unless quick)."""
    sizes = (100, 1000) if quick else (100, 1000, 10000)
    results = {n: measure(n, quick) for n in sizes}
    base = results[100]
    floor = cli_floor(quick)
    rows: list[dict[str, object]] = [
        row("avatar session list --all, no sessions (CLI floor)", floor, None, "(reported)", True)
    ]
    labels = {
        "warm": "stores list(), cached",
        "cold": "stores list(), first listing (no cache)",
        "cli_warm": "avatar session list --all",
        "cli_first": "avatar session list --all, first run",
    }
    for key, label in labels.items():
        for n in sizes:
            value = results[n][key]
            name = f"{label}, {n:,}/provider"
            if n == 100:
                rows.append(row(name, value, None, "(baseline)", True))
            elif n == 1000 and key in ("warm", "cli_warm"):
                rows.append(row(name, value, base[key], f"< {TARGET} s", value < TARGET))
            else:
                rows.append(row(name, value, base[key], "(reported; ratio = growth)", True))
    for n in sizes:
        value = results[n]["show"]
        name = f"avatar session show FULL_ID, {n:,}/provider"
        if n == 100:
            rows.append(row(name, value, None, "(baseline)", True))
        else:
            ok = value <= SHOW_GROWTH * base["show"]
            rows.append(row(name, value, base["show"], f"≤ {SHOW_GROWTH:.0f}× at 100", ok))
    # In process, the stores return every session, cached or not: linear at best. What a
    # person runs, `avatar session list`, shows a page and must grow sub-linearly when warm.
    rows += growth_rows(
        results,
        sizes,
        {"cold": labels["cold"], "warm": labels["warm"], "cli_warm": labels["cli_warm"]},
        linear={"cold", "warm"},
    )
    started = sum(r["started"] for r in results.values())
    rows.append(
        row("agent processes started while listing", started, None, "0", started == 0, unit="")
    )
    return rows


#: Growth allowed per 10× sessions: linear (10×, plus 10% for noise) or sub-linear (< 10×).
LINEAR = 11.0
SUB_LINEAR = 10.0


def growth_rows(
    results: dict[int, dict[str, float]],
    sizes: tuple[int, ...],
    labels: dict[str, str],
    linear: set[str] | None = None,
) -> list[dict[str, object]]:
    """One row per 10× step of `sizes` and per key of `labels`: the time ratio against its
    target (the keys in `linear`, by default those starting with "cold" or "first", must be
    linear, the others sub-linear)."""
    rows: list[dict[str, object]] = []
    for key, label in labels.items():
        linear_key = key in linear if linear is not None else key.startswith(("cold", "first"))
        limit, text = (
            (LINEAR, "≤ 11× (linear)") if linear_key else (SUB_LINEAR, "< 10× (sub-linear)")
        )
        for small, big in itertools.pairwise(sizes):
            grow = results[big][key] / results[small][key]
            rows.append(
                row(
                    f"growth {small:,}→{big:,}/provider: {label}",
                    results[big][key],
                    results[small][key],
                    text,
                    grow <= limit if linear_key else grow < limit,
                    ratio=grow,
                )
            )
    return rows
