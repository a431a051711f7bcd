"""`read`: a text file's lines, from `offset`, at most `limit` (and 2,000 lines / 50 KB)."""

from __future__ import annotations

from pydantic import Field

from avatar.native.tools.base import AgentToolResult, Tool, ToolArgs, ToolContext, ToolError
from avatar.native.tools.truncate import MAX_BYTES, MAX_LINES


class ReadArgs(ToolArgs):
    """Arguments of `read`."""

    path: str = Field(description="File to read, relative to the project root.")
    offset: int = Field(1, ge=1, description="1-based line number to start at.")
    limit: int | None = Field(None, ge=1, description="Maximum number of lines to return.")


class ReadTool(Tool, name="read", kind="read", args=ReadArgs):
    """Read a text file."""

    description = (
        "Read a text file. Returns its lines from `offset` (1-based), at most `limit` lines "
        f"and never more than {MAX_LINES} lines or {MAX_BYTES // 1024} KB; when cut, a note "
        "says which offset reads the rest."
    )

    async def run(self, args: ReadArgs, ctx: ToolContext) -> AgentToolResult:
        """Read the requested lines."""
        real = ctx.scope.check(args.path, "read")
        if real.is_dir():
            raise ToolError(f"{args.path} is a directory; use ls to list it")
        if not real.exists():
            raise ToolError(f"{args.path}: no such file")
        want = min(args.limit or MAX_LINES, MAX_LINES)
        kept: list[str] = []
        size = 0
        total = 0
        cut_by_size = False
        with open(real, "rb") as f:
            head = f.read(8192)
            if b"\0" in head:
                raise ToolError(f"{args.path} looks binary; read text files only")
            f.seek(0)
            for raw in f:
                total += 1
                if total < args.offset or len(kept) >= want or cut_by_size:
                    continue
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                n = len(line.encode()) + 1
                if size + n > MAX_BYTES:
                    if not kept:  # one enormous line: show its start
                        kept.append(line.encode()[:MAX_BYTES].decode(errors="ignore"))
                    cut_by_size = True
                    continue
                kept.append(line)
                size += n
        if total == 0:
            return AgentToolResult("(empty file)")
        if args.offset > total:
            raise ToolError(f"offset {args.offset} is past the end of {args.path} ({total} lines)")
        text = "\n".join(kept)
        last = args.offset + len(kept) - 1
        if last < total:
            reason = f"{MAX_BYTES // 1024} KB limit" if cut_by_size else "line limit"
            text += (
                f"\n\n[showing lines {args.offset}-{last} of {total} ({reason}); "
                f"use offset={last + 1} to read more]"
            )
        return AgentToolResult(text)
