"""`find`: paths matching a glob, relative to the project."""

from __future__ import annotations

import threading
from collections.abc import Generator
from pathlib import Path

from pydantic import Field

from avatar.native.tools.base import AgentToolResult, Tool, ToolArgs, ToolContext
from avatar.native.tools.errors import ToolError
from avatar.native.tools.walk import search, walk
from avatar.policy.patterns import glob_match


class FindArgs(ToolArgs):
    """Arguments of `find`."""

    pattern: str = Field(
        description="Glob, e.g. *.py (a name at any depth) or src/**/test_*.py (a path)."
    )
    path: str = Field(".", description="Directory to search, relative to the project root.")


class FindTool(Tool, name="find", kind="search", args=FindArgs):
    """Find files and directories by glob. A pattern without '/' matches names at any depth
    (*.py); with '/' it matches the path relative to `path` (src/**/*.py). Directories end with
    '/'. Skips .git, node_modules, virtualenvs and caches."""

    async def run(self, args: FindArgs, ctx: ToolContext) -> AgentToolResult:
        """Walk in a worker thread and list what matches."""
        start = ctx.scope.check(args.path, "read")
        if not start.is_dir():
            raise ToolError(f"{args.path}: not a directory")
        return await search(
            lambda stop: self._find(args.pattern, start, ctx, stop),
            "paths",
            "use a narrower pattern or path",
        )

    def _find(
        self, pattern: str, start: Path, ctx: ToolContext, stop: threading.Event
    ) -> Generator[str, None, None]:
        by_name = "/" not in pattern.strip("/")
        for path in walk(start, ctx.scope, stop, dirs=True):
            rel = path.relative_to(start).as_posix()
            if glob_match(pattern, path.name if by_name else rel):
                yield ctx.scope.display(path) + ("/" if path.is_dir() else "")
