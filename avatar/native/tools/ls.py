"""`ls`: the entries of a directory (directories end with `/`)."""

from __future__ import annotations

import os

from pydantic import Field

from avatar.native.tools.base import AgentToolResult, Tool, ToolArgs, ToolContext
from avatar.native.tools.errors import ToolError
from avatar.native.tools.truncate import truncate_head


class LsArgs(ToolArgs):
    """Arguments of `ls`."""

    path: str = Field(".", description="Directory to list, relative to the project root.")


class LsTool(Tool, name="ls", kind="read", args=LsArgs):
    """List a directory's entries, sorted, dotfiles included; directories end with '/'."""

    async def run(self, args: LsArgs, ctx: ToolContext) -> AgentToolResult:
        """List the directory."""
        real = ctx.scope.check(args.path, "read")
        if not real.is_dir():
            what = "not a directory" if real.exists() else "no such directory"
            raise ToolError(f"{args.path}: {what}")
        names: list[str] = []
        with os.scandir(real) as entries:
            for e in entries:
                try:
                    is_dir = e.is_dir()
                except OSError:
                    is_dir = False
                names.append(e.name + "/" if is_dir else e.name)
        if not names:
            return AgentToolResult("(empty directory)")
        names.sort(key=str.lower)
        cut = truncate_head("\n".join(names))
        text = cut.text
        if cut.truncated:
            text += (
                f"\n\n[showing {cut.shown_lines} of {cut.total_lines} entries; "
                "use find with a pattern to narrow it]"
            )
        return AgentToolResult(text)
