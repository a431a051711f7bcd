"""`grep`: regular-expression search through files, answered as `file:line: text`."""

from __future__ import annotations

import re
import threading
from collections.abc import Generator
from pathlib import Path
from stat import S_ISREG

from pydantic import Field

from avatar.fileio import open_regular
from avatar.native.tools.base import AgentToolResult, Tool, ToolArgs, ToolContext, ToolError
from avatar.native.tools.walk import search, walk
from avatar.policy.patterns import glob_match

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


class GrepTool(Tool, name="grep", kind="search", args=GrepArgs):
    """Search file contents with a regular expression; answers `file:line: text` lines. Skips
    binary files, .git, node_modules, virtualenvs and caches (name one in `path` to search it).
    Narrow with `path` or `glob` when there are too many matches."""

    async def run(self, args: GrepArgs, ctx: ToolContext) -> AgentToolResult:
        """Search in a worker thread, so an abort is not held up by a big tree."""
        try:
            regex = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
        except re.error as e:
            raise ToolError(f"invalid regular expression {args.pattern!r}: {e}") from None
        start = ctx.scope.check(args.path, "read")
        if not start.exists():
            raise ToolError(f"{args.path}: no such file or directory")
        return await search(
            lambda stop: self._search(regex, start, args.glob, ctx, stop),
            "matching lines",
            "narrow the pattern, path or glob to see the rest",
        )

    def _search(
        self,
        regex: re.Pattern[str],
        start: Path,
        glob: str | None,
        ctx: ToolContext,
        stop: threading.Event,
    ) -> Generator[str, None, None]:
        for path in walk(start, ctx.scope, stop):
            shown = ctx.scope.display(path)
            if glob and not (glob_match(glob, path.name) or glob_match(glob, shown)):
                continue
            try:
                st = path.stat()
                if not S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
                    continue  # a FIFO would block the read for good, a device never end
                with open_regular(path) as f:
                    data = f.read(MAX_FILE_BYTES + 1)
            except OSError:
                continue
            if b"\0" in data[:8192]:
                continue
            text = data.decode("utf-8", errors="replace")
            if not regex.search(text):
                continue
            for lineno, line in enumerate(text.splitlines(), 1):
                if regex.search(line):
                    cut = line[:MAX_LINE_CHARS] + "…" if len(line) > MAX_LINE_CHARS else line
                    yield f"{shown}:{lineno}: {cut}"
            if stop.is_set():
                break
