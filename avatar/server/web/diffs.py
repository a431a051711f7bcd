"""A tool call's file change as the web page shows it, as the terminal draws one
(`avatar.cli.repl.diff_view`): the file relative to the project and its counts, then each
changed line with its number in the file, its sign, and its code highlighted for the file's
language on a red or green ground (`avatar.core.diffs` says what changed, the REPL's reading
of it). Every piece of the file's text is escaped (or highlighted, which escapes)."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from avatar.core.diffs import FileChange, changes_of, changes_reported, locate, shown_from
from avatar.core.events import FileDiff, ToolCallStarted
from avatar.library.export.highlight import highlight_lines

_CLASS = {"+": "add", "-": "del", " ": "ctx"}
#: The events that may carry a change.
TOOL_EVENTS = ("tool_call_started", "tool_call_updated", "tool_call_finished")


def _changes(event: dict[str, Any]) -> list[FileChange]:
    reported = [FileDiff(**d) for d in event.get("diffs") or []]
    if reported:
        return changes_reported(reported)
    if event.get("type") == "tool_call_started" and isinstance(event.get("input"), dict):
        return changes_of(ToolCallStarted(id="", name="", input=event["input"]))
    return []


def _lines(change: FileChange, text: str) -> list[str]:
    # Split as `FileChange.hunks` splits, so a row's index is its line here.
    return highlight_lines("\n".join(text.splitlines()), change.path)


def change_html(change: FileChange) -> str:
    """One file's change: its head and its hunks (a `⋯` line between two)."""
    old, new = _lines(change, change.old), _lines(change, change.new)
    added = removed = 0
    rows: list[str] = []
    for hunk in change.hunks():
        if rows:
            rows.append('<span class="gap">⋯</span>')
        for row in hunk:
            added, removed = added + (row.sign == "+"), removed + (row.sign == "-")
            source = old if row.sign == "-" else new
            code = source[row.index] if row.index < len(source) else escape(row.text)
            number = change.number(row)
            rows.append(
                f'<span class="{_CLASS[row.sign]}"><i>{number if number is not None else ""}</i>'
                f"<b>{row.sign}</b> {code}</span>"
            )
    head = f'<div class="path">{escape(change.path)} <small>+{added} -{removed}</small></div>'
    return f'<div class="diff">{head}<pre class="hl">{"".join(rows)}</pre></div>'


def diff_html(event: dict[str, Any], cwd: Path) -> str:
    """The changes a tool call's event carries or names, as HTML; "" when none."""
    if event.get("type") not in TOOL_EVENTS:
        return ""
    return "".join(change_html(shown_from(locate(c, cwd), cwd)) for c in _changes(event))
