"""`avatar mcp` start-up (docs/design.md §12): from starting the process to the answer of
`tools/list` (after `initialize`), against the venv's `python -c pass` and the tests' stdlib
MCP server of one tool (`tests/support/mcp_server.py`: a Python MCP server that does nothing
else), interleaved in the same run. Target: ≤ 300 ms absolute. Also reported: the first
`search_sessions` answer (the engine and the search index built on that first call) in an
empty project.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from benchmarks.common import ROOT, Command, avatar_exe, interleaved, row, scratch

#: The target from start to the `tools/list` answer, in seconds.
TARGET = 0.300


def answered(argv: list[str], env: dict[str, str], cwd: Path, call: bool = False) -> float:
    """Seconds from starting `argv` to its answer of `tools/list` (with `call`: of a first
    `search_sessions` after it)."""
    from tests.support.mcp_client import McpClient

    started = time.perf_counter()
    with McpClient(argv, env=env, cwd=cwd) as client:
        client.initialize()
        client.request("tools/list")
        if call:
            client.call("search_sessions", {"query": "anything"})
        return time.perf_counter() - started


def run(quick: bool) -> list[dict[str, object]]:
    """Time `avatar mcp` to its tool list, and its baselines, in turns."""
    runs = 7 if quick else 21
    with scratch("mcp", PYTHONPATH=str(ROOT)) as (proj, env):
        stamp = [sys.executable, str(ROOT / "tests" / "support" / "mcp_server.py")]
        times: dict[str, list[float]] = {"base": [], "stamp": [], "avatar": [], "call": []}
        for _ in range(runs):
            base = interleaved({"base": Command([sys.executable, "-c", "pass"])}, 1)["base"]
            times["base"].append(base)
            times["stamp"].append(answered(stamp, env, proj))
            times["avatar"].append(answered([avatar_exe(), "mcp"], env, proj))
            call = answered([avatar_exe(), "mcp"], env, proj, call=True)
            times["call"].append(call)
    t = {name: statistics.median(values) for name, values in times.items()}
    base = t["base"]
    return [
        row("python -c pass (baseline)", base, None, "-", True),
        row(
            "stdlib MCP server of one tool: start → tools/list",
            t["stamp"],
            base,
            "(reported)",
            True,
        ),
        row(
            "avatar mcp: start → tools/list answered",
            t["avatar"],
            base,
            f"≤ {TARGET * 1000:.0f} ms",
            t["avatar"] <= TARGET,
        ),
        row(
            "avatar mcp: start → first search_sessions (empty)", t["call"], base, "(reported)", True
        ),
    ]
