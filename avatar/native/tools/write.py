"""`write`: create or overwrite a file (asks permission)."""

from __future__ import annotations

from pydantic import Field

from avatar.core.fileio import SpecialFileError, special_kind
from avatar.native.tools.base import AgentToolResult, Tool, ToolArgs, ToolContext
from avatar.native.tools.errors import ToolError


class WriteArgs(ToolArgs):
    """Arguments of `write`."""

    path: str = Field(description="File to write, relative to the project root.")
    content: str = Field(description="The complete new content of the file.")


class WriteTool(Tool, name="write", kind="edit", args=WriteArgs):
    """Create or overwrite a file with `content`; parent directories are created. Prefer `edit`
    for changing part of an existing file."""

    async def run(self, args: WriteArgs, ctx: ToolContext) -> AgentToolResult:
        """Write the file after asking permission."""
        real = ctx.scope.check(args.path, "write")
        if real.is_dir():
            raise ToolError(f"{args.path} is a directory")
        kind = special_kind(real.stat().st_mode) if real.exists() else None
        if kind is not None:  # asked before the question: no answer makes it writable
            raise ToolError(f"{args.path} is {kind}, not a regular file")
        shown = ctx.scope.display(real)
        await self.require_permission(ctx, f"write {shown}")
        data = args.content.encode()
        try:
            existed = ctx.scope.write_file(args.path, data)
        except IsADirectoryError:
            raise ToolError(f"{args.path} is a directory") from None
        except SpecialFileError as e:
            raise ToolError(f"{args.path} is {e.kind}, not a regular file") from None
        lines = args.content.count("\n") + (0 if args.content.endswith("\n") else 1)
        verb = "overwrote" if existed else "created"
        return AgentToolResult(f"{verb} {shown} ({len(data)} bytes, {lines} lines)")
