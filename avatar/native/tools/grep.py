"""`grep`: regular-expression search through files, answered as `file:line: text`.

Patterns run on the `regex` module, not `re`: its syntax is Python's, and it takes a timeout
and lets go of the GIL while it matches. A pattern that backtracks without end (`(a+)+$b` on
a line of `a`s) stops after MATCH_SECONDS on a file and is an error the model can act on,
and the event loop keeps running meanwhile, so Ctrl-C ends the turn at once (`re` holds the
GIL for the whole match: avatar froze until it finished, which could be never).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator
from pathlib import Path
from stat import S_ISREG

import regex
from pydantic import Field

from avatar.native.tools.base import AgentToolResult, Tool, ToolArgs, ToolContext
from avatar.native.tools.errors import ToolError
from avatar.native.tools.walk import search, walk
from avatar.policy.patterns import glob_match

MAX_LINE_CHARS = 500
MAX_FILE_BYTES = 10 * 1024 * 1024
MATCH_SECONDS = 2.0  # the regex's time on one file


class _TooSlow(Exception):
    """The pattern ran out of time on a file (its name is the message)."""


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
            pattern = regex.compile(args.pattern, regex.IGNORECASE if args.ignore_case else 0)
        except regex.error as e:
            raise ToolError(f"invalid regular expression {args.pattern!r}: {e}") from None
        start = ctx.scope.check(args.path, "read")
        if not start.exists():
            raise ToolError(f"{args.path}: no such file or directory")
        try:
            return await search(
                lambda stop: self._search(pattern, start, args.glob, ctx, stop),
                "matching lines",
                "narrow the pattern, path or glob to see the rest",
            )
        except _TooSlow as e:
            raise ToolError(
                f"the pattern ran for over {MATCH_SECONDS:g} s on {e} without finishing (it "
                "backtracks without end): simplify it, e.g. no nested quantifiers like (a+)+"
            ) from None

    def _search(
        self,
        pattern: regex.Pattern[str],
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
                # What is opened is what the walk judged (a symlink's target: checked again).
                scope = ctx.scope
                f = scope.open_read(str(path)) if path.is_symlink() else scope.open_judged(path)
                with f:
                    data = f.read(MAX_FILE_BYTES + 1)
            except (OSError, ToolError):
                continue
            if b"\0" in data[:8192]:
                continue
            text = data.decode("utf-8", errors="replace")
            deadline = time.monotonic() + MATCH_SECONDS
            try:
                if not pattern.search(text, timeout=MATCH_SECONDS):
                    continue
                for lineno, line in enumerate(text.splitlines(), 1):
                    if pattern.search(line, timeout=max(deadline - time.monotonic(), 0.001)):
                        cut = line[:MAX_LINE_CHARS] + "…" if len(line) > MAX_LINE_CHARS else line
                        yield f"{shown}:{lineno}: {cut}"
            except TimeoutError:
                raise _TooSlow(shown) from None
            if stop.is_set():
                break
