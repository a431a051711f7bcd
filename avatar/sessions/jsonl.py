"""Tolerant reading of the agents' JSONL session files, shared by every store.

Session files are written by other programs, may be appended to while we read them, and may be
torn, binary or hostile. Everything here is defensive: a bad line is counted and skipped, an
overlong line is skipped without ever being held in memory whole, and nothing raises for bad
content (only `OSError` for an unreadable file, which callers turn into a warning).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from avatar.core.surrogates import may_hold_surrogate, without_surrogates
from avatar.core.times import parse_time as iso_time
from avatar.policy.secrets import title_source
from avatar.sessions.handoff_marker import strip_handoff

# Listing parses only lines up to this size; longer ones are huge tool outputs or garbage and
# never carry what a listing needs.
LIST_LINE_CAP = 1 << 20
# Reading a whole transcript (`session show`, handoffs) accepts larger lines.
TRANSCRIPT_LINE_CAP = 16 << 20
# How much of an overlong line is held at once while skipping to its end.
_SKIP_CHUNK = 1 << 20


@dataclass
class LineStats:
    """What a pass over a file skipped: broken (bad JSON, not an object) and oversized lines."""

    broken: int = 0
    oversized: int = 0
    # 1-based numbers of the first few skipped lines, for the warning text.
    where: list[int] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        """All lines that were skipped."""
        return self.broken + self.oversized

    def note(self, lineno: int, *, oversized: bool) -> None:
        """Count one skipped line."""
        if oversized:
            self.oversized += 1
        else:
            self.broken += 1
        if len(self.where) < 3:
            self.where.append(lineno)

    def warning(self, path: Path | str) -> str | None:
        """A one-line warning describing the skipped lines, or None when nothing was skipped."""
        if not self.skipped:
            return None
        parts = []
        if self.broken:
            parts.append(f"{self.broken} unreadable line(s)")
        if self.oversized:
            parts.append(f"{self.oversized} oversized line(s)")
        lines = ", ".join(str(n) for n in self.where)
        more = ", …" if self.skipped > len(self.where) else ""
        return f"{path}: skipped {' and '.join(parts)} (line {lines}{more})"

    def warnings(self, path: Path | str) -> list[str]:
        """`warning()` as a list: empty when nothing was skipped."""
        line = self.warning(path)
        return [line] if line else []


def iter_raw_lines(f: IO[bytes], max_line: int, stats: LineStats) -> Iterator[tuple[int, bytes]]:
    """Yield `(lineno, line)` for each non-blank line of at most `max_line` bytes.

    Longer lines are counted in `stats` and skipped in bounded chunks, so a single 50 MB line
    costs a read but never 50 MB of memory.
    """
    lineno = 0
    while True:
        line = f.readline(max_line + 1)
        if not line:
            return
        lineno += 1
        if len(line) > max_line and not line.endswith(b"\n"):
            stats.note(lineno, oversized=True)
            while True:
                rest = f.readline(_SKIP_CHUNK)
                if not rest or rest.endswith(b"\n"):
                    break
            continue
        if line.isspace():
            continue
        yield lineno, line


_DECODER = json.JSONDecoder()


def parse_line(line: bytes) -> dict[str, Any] | None:
    """One JSON object, or None if the line is not valid JSON or not an object."""
    # raw_decode skips json.loads' encoding detection; listing calls this thousands of times.
    try:
        text = line.decode("utf-8").strip()
        value, end = _DECODER.raw_decode(text)
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError; and nesting
        return None  # deeper than Python's recursion limit (`[[[[…`), which json cannot read
    if end != len(text) or not isinstance(value, dict):
        return None
    # An agent's file may hold `"\ud800"` (valid JSON, no text): kept as its visible escape,
    # or the listing's cache and every print of it would fail on it.
    return without_surrogates(value) if may_hold_surrogate(line) else value


def iter_records(
    f: IO[bytes],
    stats: LineStats,
    *,
    max_line: int = TRANSCRIPT_LINE_CAP,
    want: re.Pattern[bytes] | None = None,
    parse: Callable[[bytes], dict[str, Any] | None] | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield each JSON object of a JSONL stream; broken lines are counted in `stats`.

    `want`, if given, is a cheap byte-level prefilter: lines it does not match are passed
    over unparsed (listing uses it to avoid decoding big lines it does not need; parsing is
    nearly all of a listing's cost). Filtered-out lines are not counted as skipped unless
    they cannot even be a JSON object (binary garbage, a torn fragment).
    `parse` replaces `parse_line` (a reader may decode only the part of a line it needs).
    """
    decode = parse or parse_line
    for lineno, line in iter_raw_lines(f, max_line, stats):
        if not line.endswith(b"\n") and parse_line(line) is None:
            # A torn last line (a crash mid-write, a truncated copy): never used, always counted.
            stats.note(lineno, oversized=False)
            continue
        if want is not None and want.search(line) is None:
            if not line.lstrip().startswith(b"{"):
                stats.note(lineno, oversized=False)
            continue
        record = decode(line)
        if record is None:
            stats.note(lineno, oversized=False)
            continue
        yield record


def read_records(
    path: Path,
    *,
    max_line: int = TRANSCRIPT_LINE_CAP,
    want: re.Pattern[bytes] | None = None,
) -> tuple[list[dict[str, Any]], LineStats]:
    """Every JSON object of a file, with the skip statistics (raises OSError if unreadable)."""
    stats = LineStats()
    with path.open("rb") as f:
        records = list(iter_records(f, stats, max_line=max_line, want=want))
    return records, stats


# ----- times ----------------------------------------------------------------------------------


def parse_time(value: Any) -> datetime | None:
    """A timezone-aware UTC datetime from an ISO-8601 string (`avatar.core.times.parse_time`) or
    epoch seconds/milliseconds, as agents' files hold them; None for anything else."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value  # ms vs s
        try:
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    stamp = iso_time(value)
    return stamp.astimezone(UTC) if stamp is not None else None


def mtime_utc(mtime: float) -> datetime:
    """A file modification time as an aware UTC datetime."""
    return datetime.fromtimestamp(mtime, tz=UTC)


def later(a: datetime | None, b: datetime | None) -> datetime | None:
    """The later of two optional times."""
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


# ----- text -------------------------------------------------------------------------------------

TITLE_MAX = 100
_SPACE = re.compile(r"\s+")


def title_from(text: str | None, limit: int = TITLE_MAX) -> str | None:
    """A one-line title: whitespace collapsed, secrets masked, cut to `limit` characters with
    an ellipsis."""
    if not text:
        return None
    # Handed-over context is no title.
    line = _SPACE.sub(" ", title_source(strip_handoff(text))).strip()
    if not line:
        return None
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def is_injected(text: str, prefixes: Iterable[str]) -> bool:
    """True when a user message is context the CLI injected, not something the user typed."""
    stripped = text.lstrip()
    return not stripped or any(stripped.startswith(p) for p in prefixes)


def blocks_text(content: Any, *, kinds: tuple[str, ...] = ("text", "input_text")) -> str:
    """The text of a message content: a plain string, or a list of typed or untyped parts."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict):
            kind = part.get("type")
            text = part.get("text")
            if isinstance(text, str) and (kind is None or kind in kinds):
                parts.append(text)
    return "\n".join(p for p in parts if p)
