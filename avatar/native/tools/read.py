"""`read`: a text file's lines, from `offset`, at most `limit` (and 2,000 lines / 50 KB).

The file is read in bounded pieces, never whole: a 400 MB file of one line costs a pass over
it and 50 KB of memory. A line longer than the limit is shown in part, and the note gives the
`byte_offset` that reads on from where it was cut.
"""

from __future__ import annotations

import os
from typing import BinaryIO

from pydantic import Field

from avatar.core.fileio import SpecialFileError
from avatar.native.tools.base import AgentToolResult, Tool, ToolArgs, ToolContext
from avatar.native.tools.errors import ToolError
from avatar.native.tools.truncate import MAX_BYTES, MAX_LINES

_CHUNK = 1 << 20  # what is held at once while counting or skipping lines


class ReadArgs(ToolArgs):
    """Arguments of `read`."""

    path: str = Field(description="File to read, relative to the project root.")
    offset: int = Field(1, ge=1, description="1-based line number to start at.")
    limit: int | None = Field(None, ge=1, description="Maximum number of lines to return.")
    byte_offset: int | None = Field(
        None,
        ge=0,
        description="Start at this byte of the file instead of a line (to read on in a line "
        "too long to show whole; a cut read's note gives it).",
    )


class ReadTool(Tool, name="read", kind="read", args=ReadArgs):
    """Read a text file."""

    description = (
        "Read a text file. Returns its lines from `offset` (1-based), at most `limit` lines "
        f"and never more than {MAX_LINES} lines or {MAX_BYTES // 1024} KB; when cut, a note "
        "says which offset (or, inside a very long line, which byte_offset) reads the rest."
    )

    async def run(self, args: ReadArgs, ctx: ToolContext) -> AgentToolResult:
        """Read the requested lines."""
        try:
            f = ctx.scope.open_read(args.path)
        except IsADirectoryError:
            raise ToolError(f"{args.path} is a directory; use ls to list it") from None
        except FileNotFoundError:
            raise ToolError(f"{args.path}: no such file") from None
        except SpecialFileError as e:
            raise ToolError(f"{args.path} is {e.kind}, not a regular file") from None
        with f:
            if b"\0" in f.read(8192):
                raise ToolError(f"{args.path} looks binary; read text files only")
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return AgentToolResult("(empty file)")
            if args.byte_offset is not None:
                return _from_byte(f, args, size)
            return _from_line(f, args)


def _from_line(f: BinaryIO, args: ReadArgs) -> AgentToolResult:
    total = _count_lines(f)
    if args.offset > total:
        raise ToolError(f"offset {args.offset} is past the end of {args.path} ({total} lines)")
    f.seek(0)
    for _ in range(args.offset - 1):
        _skip_line(f)
    kept, cut_at = _take(f, min(args.limit or MAX_LINES, MAX_LINES))
    text = "\n".join(kept)
    last = args.offset + len(kept) - 1
    if cut_at is not None:
        return AgentToolResult(
            f"{text}\n\n[line {args.offset} is longer than the {MAX_BYTES // 1024} KB limit; "
            f"showing its start; use byte_offset={cut_at} to read on from there]"
        )
    if last < total:
        by_size = len(kept) < min(args.limit or MAX_LINES, MAX_LINES)
        reason = f"{MAX_BYTES // 1024} KB limit" if by_size else "line limit"
        text += (
            f"\n\n[showing lines {args.offset}-{last} of {total} ({reason}); "
            f"use offset={last + 1} to read more]"
        )
    return AgentToolResult(text)


def _from_byte(f: BinaryIO, args: ReadArgs, size: int) -> AgentToolResult:
    start = args.byte_offset or 0
    if start >= size:
        raise ToolError(f"byte_offset {start} is past the end of {args.path} ({size} bytes)")
    f.seek(start)
    while start < size and f.read(1)[0] & 0xC0 == 0x80:  # not inside a UTF-8 character
        start += 1
    f.seek(start)
    kept, cut_at = _take(f, min(args.limit or MAX_LINES, MAX_LINES))
    end = cut_at if cut_at is not None else f.tell()
    text = "\n".join(kept)
    if end < size:
        text += f"\n\n[showing bytes {start}-{end} of {size}; use byte_offset={end} to read more]"
    return AgentToolResult(text)


def _take(f: BinaryIO, want: int) -> tuple[list[str], int | None]:
    """Up to `want` lines from the current position within MAX_BYTES; and, when the first
    line alone is over the limit (only its start is kept), the byte where it was cut."""
    kept: list[str] = []
    size = 0
    while len(kept) < want:
        start = f.tell()
        raw = f.readline(MAX_BYTES - size)
        if not raw:
            break
        if not raw.endswith(b"\n") and f.read(1):  # more of this line than fits
            if kept:
                f.seek(start)
                break
            raw = _whole_chars(raw)
            kept.append(raw.decode("utf-8", errors="replace"))
            return kept, start + len(raw)
        kept.append(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
        size += len(raw) + (0 if raw.endswith(b"\n") else 1)
    return kept, None


def _count_lines(f: BinaryIO) -> int:
    """Lines in the file (a last line without newline counts), read in chunks."""
    f.seek(0)
    count, last = 0, b"\n"
    while chunk := f.read(_CHUNK):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")


def _skip_line(f: BinaryIO) -> None:
    while (piece := f.readline(_CHUNK)) and not piece.endswith(b"\n"):
        pass


def _whole_chars(raw: bytes) -> bytes:
    """`raw` without the UTF-8 character its end cuts in two (if it does)."""
    for back in range(1, min(4, len(raw)) + 1):
        lead = raw[-back]
        if lead & 0xC0 != 0x80:  # ASCII or the first byte of a character
            need = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
            return raw if back >= need else raw[:-back]
    return raw
