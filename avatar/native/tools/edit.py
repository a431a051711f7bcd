"""`edit`: replace an exact piece of text in a file (asks permission)."""

from __future__ import annotations

from pydantic import Field

from avatar.core.fileio import SpecialFileError
from avatar.native.tools.base import AgentToolResult, Tool, ToolArgs, ToolContext
from avatar.native.tools.errors import ToolError


class EditArgs(ToolArgs):
    """Arguments of `edit`."""

    path: str = Field(description="File to edit, relative to the project root.")
    old_text: str = Field(description="Exact text to replace, including whitespace.")
    new_text: str = Field(description="Replacement text.")
    replace_all: bool = Field(False, description="Replace every occurrence, not just one.")


class EditTool(Tool, name="edit", kind="edit", args=EditArgs):
    """Replace `old_text` with `new_text` in a file. `old_text` must match exactly once
    (whitespace included) unless `replace_all` is true; if it matches several places, include
    more surrounding lines to make it unique."""

    async def run(self, args: EditArgs, ctx: ToolContext) -> AgentToolResult:
        """Apply the replacement after checking it is unambiguous and asking permission."""
        real = ctx.scope.check(args.path, "write")
        if not real.exists() or real.is_dir():
            raise ToolError(f"{args.path}: no such file (use write to create it)")
        if not args.old_text:
            raise ToolError("old_text is empty; use write to replace a whole file")
        try:
            with ctx.scope.open_read(args.path) as f:
                text = f.read().decode("utf-8", errors="surrogateescape")
        except SpecialFileError as e:
            raise ToolError(f"{args.path} is {e.kind}, not a regular file") from None
        old, new = args.old_text, args.new_text
        count = text.count(old)
        if count == 0 and "\r\n" in text and "\r\n" not in old:
            # The model writes "\n"; the file uses CRLF. Match and keep the file's endings.
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
            count = text.count(old)
        if count == 0:
            hint = ""
            if " ".join(args.old_text.split()) in " ".join(text.split()):
                hint = " (it matches if whitespace is ignored: copy the exact indentation)"
            raise ToolError(
                f"old_text not found in {args.path}{hint}; read the file and copy the exact text"
            )
        if count > 1 and not args.replace_all:
            raise ToolError(
                f"old_text matches {count} places in {args.path}; include more surrounding "
                "context to make it unique, or set replace_all to true"
            )
        shown = ctx.scope.display(real)
        await self.require_permission(ctx, f"edit {shown}")
        line = text[: text.index(old)].count("\n") + 1
        updated = text.replace(old, new) if args.replace_all else text.replace(old, new, 1)
        ctx.scope.write_file(args.path, updated.encode("utf-8", errors="surrogateescape"))
        what = f"{count} occurrences" if args.replace_all and count > 1 else f"line {line}"
        return AgentToolResult(f"edited {shown}: replaced {what}")
