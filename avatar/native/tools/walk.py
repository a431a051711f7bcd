"""Walking the project for `grep` and `find`: skips denied paths, VCS and cache directories,
runs in a worker thread and stops at the output limits."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TypeVar

from avatar.native.tools.base import AgentToolResult
from avatar.native.tools.truncate import MAX_BYTES, MAX_LINES
from avatar.policy.scope import ScopePolicy

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


T = TypeVar("T")
R = TypeVar("R")

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
        found, more = await _in_daemon_thread(_take, lines(stop))
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


async def _in_daemon_thread(fn: Callable[[T], R], arg: T) -> R:
    """`fn(arg)` in a thread of its own: `asyncio.to_thread` but a daemon, so a match still
    running when the turn is cancelled (it ends at the next line, or its regex's timeout)
    never holds up avatar's exit, as the pool's threads would."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[R] = loop.create_future()

    def settle(result: R | None, error: BaseException | None) -> None:
        if done.cancelled():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    def work() -> None:
        try:
            outcome: tuple[R | None, BaseException | None] = (fn(arg), None)
        except BaseException as e:
            outcome = (None, e)
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=work, name="avatar-search", daemon=True).start()
    return await done


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
