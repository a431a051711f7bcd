"""A guard between an ACP agent's stdout and avatar's JSON-RPC client: only JSON objects get
through.

A line that is not JSON, a JSON line that is not an object (`[]`, `42`) or a line without an
end (buffered without limit) must not reach the client from a hostile or broken agent, so the
client (`jsonrpc.JsonRpc`) reads from a second stream this guard fills with whole lines that
parse as JSON objects. Anything else is dropped — a line over
`max_line` bytes without being held in memory — and the first drop of each kind is reported
through `on_drop` (one notice, not one per line). `StdoutSeen` tells whether the agent has
written anything but junk yet: an agent that writes only junk is no ACP agent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from avatar.bridges.process import STDOUT_LIMIT

#: Longest line passed on: the agent's stdout buffer limit, which is what decides a line is too
#: long (`_read_line` meets it as `LimitOverrunError`); a replayed history can be big.
MAX_LINE = STDOUT_LIMIT


class StdoutSeen:
    """What the guard has seen of an agent's stdout so far."""

    def __init__(self) -> None:
        self.messages = 0
        self.first_junk: bytes | None = None  # the start of the first line dropped
        self.junk = asyncio.Event()  # set at the first line dropped

    def dropped(self, line: bytes) -> None:
        """A line that is no JSON-RPC message went by."""
        if self.first_junk is None:
            self.first_junk = line[:60].rstrip(b"\r\n")
            self.junk.set()


def guard_stdout(
    source: asyncio.StreamReader,
    on_drop: Callable[[str], None],
    *,
    max_line: int = MAX_LINE,
    seen: StdoutSeen | None = None,
) -> asyncio.StreamReader:
    """A StreamReader carrying only the JSON-object lines of `source` (see module docstring);
    `seen` is kept up to date with what went by.

    The copying task ends at the source's end of file (the agent exited or closed stdout).
    """
    guarded = asyncio.StreamReader(limit=max_line)
    copy = _copy(source, guarded, on_drop, max_line, seen or StdoutSeen())
    task = asyncio.get_running_loop().create_task(copy)
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return guarded


_tasks: set[asyncio.Task[None]] = set()  # strong references: a task is not collected mid-copy


async def _copy(
    source: asyncio.StreamReader,
    sink: asyncio.StreamReader,
    on_drop: Callable[[str], None],
    max_line: int,
    seen: StdoutSeen,
) -> None:
    told: set[str] = set()

    def drop(kind: str, message: str) -> None:
        if kind not in told:
            told.add(kind)
            on_drop(message)

    try:
        while True:
            line, too_long = await _read_line(source)
            if too_long:
                seen.dropped(b"(a line over the limit)")
                drop("long", f"skipped a line from the agent longer than {max_line:,} bytes")
                continue
            if not line:
                break
            if not line.strip():
                continue
            if _is_object(line):
                seen.messages += 1
                sink.feed_data(line if line.endswith(b"\n") else line + b"\n")
            else:
                seen.dropped(line)
                drop("junk", "skipped output from the agent that is not a JSON-RPC message")
    except (OSError, asyncio.IncompleteReadError):
        pass  # the pipe broke: the agent is gone, which the process watcher reports
    finally:
        sink.feed_eof()


async def _read_line(source: asyncio.StreamReader) -> tuple[bytes, bool]:
    """The next line (b"" at EOF) and whether it was over the source's limit (then it was
    discarded)."""
    try:
        return await source.readuntil(b"\n"), False
    except asyncio.IncompleteReadError as e:  # a last line without its newline
        return e.partial, False
    except asyncio.LimitOverrunError as e:
        await source.readexactly(e.consumed)
    # Discard the rest of an overlong line, a buffer at a time, never holding it.
    while True:
        try:
            await source.readuntil(b"\n")
            return b"", True
        except asyncio.IncompleteReadError:
            return b"", True
        except asyncio.LimitOverrunError as e:
            await source.readexactly(e.consumed)


def _is_object(line: bytes) -> bool:
    if not line.lstrip().startswith(b"{"):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:  # not JSON, or not UTF-8
        return False
