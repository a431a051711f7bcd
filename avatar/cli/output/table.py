"""Plain aligned tables: listing must stay fast, so no rich import on this path."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from avatar.core.times import ago

if TYPE_CHECKING:
    from avatar.sessions.types import SessionInfo


def label(s: SessionInfo) -> str:
    """What a session is called on one line: the name given it, else its title."""
    return " ".join((s.name or s.title or "untitled").split())


def session_line(s: SessionInfo) -> str:
    """A session as search and prune list it: provider, id, age, label."""
    return f"{s.provider}  {s.id}  {ago(s.updated or s.created)}  {label(s)}"


def render_table(headers: list[str], rows: list[list[str]], *, shrink: int | None = None) -> str:
    """Left-aligned columns; column `shrink` is cut to fit the terminal width."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    if shrink is not None and sys.stdout.isatty():
        import shutil  # (with its archive modules) only for a terminal

        total = shutil.get_terminal_size((120, 24)).columns
        others = sum(w for i, w in enumerate(widths) if i != shrink) + 2 * (len(widths) - 1)
        widths[shrink] = max(len(headers[shrink]), min(widths[shrink], total - others))
    lines = []
    for row in [headers, *rows]:
        cells = []
        for i, cell in enumerate(row):
            if len(cell) > widths[i]:
                cell = cell[: max(widths[i] - 1, 0)] + "…"
            cells.append(cell.ljust(widths[i]) if i < len(row) - 1 else cell)
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def short_ids(ids: list[str], minimum: int = 8) -> list[str]:
    """Each id cut to the shortest prefix (at least `minimum`) that no other id shares."""
    out = []
    for sid in ids:
        n = minimum
        while n < len(sid) and any(o != sid and o.startswith(sid[:n]) for o in ids):
            n += 1
        out.append(sid[:n])
    return out
