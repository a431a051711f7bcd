"""Keep tool output within what a model can take: 2,000 lines or 50 KB, whichever first."""

from __future__ import annotations

from dataclasses import dataclass

MAX_LINES = 2000
MAX_BYTES = 50 * 1024


@dataclass
class Truncated:
    """The kept text and what was cut."""

    text: str
    truncated: bool
    total_lines: int
    shown_lines: int
    first_line: int = 1  # 1-based number of the first kept line

    @property
    def last_line(self) -> int:
        """1-based number of the last kept line."""
        return self.first_line + self.shown_lines - 1


def _split(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def truncate_head(text: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> Truncated:
    """Keep the first lines (file reads, search results); never a partial line."""
    lines = _split(text)
    if len(lines) <= max_lines and len(text.encode()) <= max_bytes:
        return Truncated(text, False, len(lines), len(lines))
    kept: list[str] = []
    size = 0
    for line in lines[:max_lines]:
        n = len(line.encode()) + 1
        if size + n > max_bytes:
            break
        kept.append(line)
        size += n
    if not kept and lines:
        # One line larger than the whole budget: show its start rather than nothing.
        return Truncated(_cut(lines[0], max_bytes), True, len(lines), 1)
    return Truncated("\n".join(kept), True, len(lines), len(kept))


def truncate_tail(text: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> Truncated:
    """Keep the last lines (command output: the end is where errors are)."""
    lines = _split(text)
    if len(lines) <= max_lines and len(text.encode()) <= max_bytes:
        return Truncated(text, False, len(lines), len(lines))
    kept: list[str] = []
    size = 0
    for line in reversed(lines[-max_lines:]):
        n = len(line.encode()) + 1
        if size + n > max_bytes:
            break
        kept.append(line)
        size += n
    kept.reverse()
    if not kept and lines:
        return Truncated(_cut(lines[-1], max_bytes), True, len(lines), 1, len(lines))
    first = len(lines) - len(kept) + 1
    return Truncated("\n".join(kept), True, len(lines), len(kept), first)


def _cut(line: str, max_bytes: int) -> str:
    return line.encode()[:max_bytes].decode(errors="ignore")
