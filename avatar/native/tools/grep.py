"""`grep`: regular-expression search through files, answered as `file:line: text`."""

from __future__ import annotations

import asyncio
import re
import threading

from pydantic import Field

from avatar.native.tools.base import AgentToolResult, Tool, ToolArgs, ToolContext, ToolError
from avatar.native.tools.truncate import MAX_BYTES, MAX_LINES
from avatar.native.tools.walk import walk
from avatar.scope import glob_match

MAX_LINE_CHARS = 500
MAX_FILE_BYTES = 10 * 1024 * 1024


class GrepArgs(ToolArgs):
    """Arguments of `grep`."""

    pattern: str = Field(description="Regular expression (Python syntax) to search for.")
    path: str = Field(".", description="File or directory to search, relative to the project.")
    glob: str | None = Field(
        None, description="Only search files whose name (or relative path) matches, e.g. *.py"
    )
    ignore_case: bool = Field(False, description="Case-insensitive search.")


class GrepTool(Tool):
    """Search file contents."""

    name = "grep"
    kind = "search"
    args_model = GrepArgs
    description = (
        "Search file contents with a regular expression; answers `file:line: text` lines. "
        "Skips binary files, .git, node_modules, virtualenvs and caches (name one in `path` "
        "to search it). Narrow with `path` or `glob` when there are too many matches."
    )

    async def run(self, args: GrepArgs, ctx: ToolContext) -> AgentToolResult:
        """Search in a worker thread, so an abort is not held up by a big tree."""
        try:
            regex = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
        except re.error as e:
            raise ToolError(f"invalid regular expression {args.pattern!r}: {e}") from None
        start = ctx.scope.check(args.path, "read")
        if not start.exists():
            raise ToolError(f"{args.path}: no such file or directory")
        stop = threading.Event()
        try:
            lines, more = await asyncio.to_thread(self._search, regex, start, args.glob, ctx, stop)
        finally:
            stop.set()
        if not lines:
            return AgentToolResult("no matches")
        text = "\n".join(lines)
        if more:
            text += (
                f"\n\n[stopped after {len(lines)} matching lines ({MAX_LINES} lines / "
                f"{MAX_BYTES // 1024} KB limit); narrow the pattern, path or glob to see the rest]"
            )
        return AgentToolResult(text)

    def _search(
        self,
        regex: re.Pattern[str],
        start: object,
        glob: str | None,
        ctx: ToolContext,
        stop: threading.Event,
    ) -> tuple[list[str], bool]:
        from pathlib import Path

        assert isinstance(start, Path)
        out: list[str] = []
        size = 0
        for path in walk(start, ctx.scope, stop):
            shown = ctx.scope.display(path)
            if glob and not (glob_match(glob, path.name) or glob_match(glob, shown)):
                continue
            try:
                if path.stat().st_size > MAX_FILE_BYTES:
                    continue
                data = path.read_bytes()
            except OSError:
                continue
            if b"\0" in data[:8192]:
                continue
            text = data.decode("utf-8", errors="replace")
            if not regex.search(text):
                continue
            for lineno, line in enumerate(text.splitlines(), 1):
                if not regex.search(line):
                    continue
                if len(line) > MAX_LINE_CHARS:
                    line = line[:MAX_LINE_CHARS] + "…"
                entry = f"{shown}:{lineno}: {line}"
                size += len(entry.encode()) + 1
                if len(out) >= MAX_LINES or size > MAX_BYTES:
                    return out, True
                out.append(entry)
            if stop.is_set():
                break
        return out, False
