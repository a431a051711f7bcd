"""Walking the project for `grep` and `find`: skips denied paths, VCS and cache directories,
runs in a worker thread and stops at the output limits."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

from avatar.native.tools.base import AgentToolResult
from avatar.native.tools.truncate import MAX_BYTES, MAX_LINES
from avatar.scope import ScopePolicy

# Never descended into unless the search starts inside one: huge, generated, or private.
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)


def walk(
    start: Path, scope: ScopePolicy, stop: threading.Event, *, dirs: bool = False
) -> Iterator[Path]:
    """Files (and with `dirs`, directories) under `start` the scope lets the model read.

    Sorted per directory so results are stable; symlinks are followed only when their target
    is inside the scope, directories never (no cycles).
    """
    if start.is_file():
        yield start
        return
    for top, dirnames, filenames in os.walk(start):
        if stop.is_set():
            return
        base = Path(top)
        keep = []
        for d in sorted(dirnames):
            p = base / d
            if d in SKIP_DIRS or p.is_symlink() or scope.is_hidden(p):
                continue
            keep.append(d)
        dirnames[:] = keep
        if dirs:
            for d in keep:
                yield base / d
        for name in sorted(filenames):
            p = base / name
            if p.is_symlink():
                real = Path(os.path.realpath(p))
                if not real.is_file() or scope.is_hidden(real):
                    continue
            elif scope.is_hidden(p):
                continue
            yield p


Lines = Callable[[threading.Event], Generator[str, None, None]]
"""A search: given the event that says stop, the lines of its answer, produced lazily."""


async def search(lines: Lines, what: str, narrower: str) -> AgentToolResult:
    """Run a search in a worker thread and answer its lines, up to MAX_LINES / MAX_BYTES.

    The walk runs off the event loop, so an abort is not held up by a big tree: the stop
    event is set when this returns or is cancelled. A cut answer ends with a note naming how
    many `what` it shows and `narrower`, how to see the rest.
    """
    stop = threading.Event()
    try:
        found, more = await asyncio.to_thread(_take, lines(stop))
    finally:
        stop.set()
    if not found:
        return AgentToolResult("no matches")
    text = "\n".join(found)
    if more:
        text += (
            f"\n\n[stopped after {len(found)} {what} ({MAX_LINES} lines / "
            f"{MAX_BYTES // 1024} KB limit); {narrower}]"
        )
    return AgentToolResult(text)


def _take(lines: Generator[str, None, None]) -> tuple[list[str], bool]:
    """The lines that fit the limits, and whether more were left."""
    out: list[str] = []
    size = 0
    try:
        for line in lines:
            size += len(line.encode()) + 1
            if len(out) >= MAX_LINES or size > MAX_BYTES:
                return out, True
            out.append(line)
        return out, False
    finally:
        lines.close()
