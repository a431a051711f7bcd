"""Edits and writes as coloured diffs, from the tool call's own input.

Tool inputs name the change the same way across agents, give or take the key: the native
agent's `write {path, content}` and `edit {path, old_text, new_text}`, Claude Code's
`Write {file_path, content}`, `Edit {file_path, old_string, new_string}` and
`MultiEdit {file_path, edits: [...]}` (claude-agent-acp passes those through as raw input).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.text import Text

    from avatar.core.events import ToolCallStarted


@dataclass(frozen=True)
class FileChange:
    """One file's change: the text before and after (a whole new file has no `old`)."""

    path: str
    old: str
    new: str

    def diff_lines(self) -> list[str]:
        """The unified diff, without its two header lines."""
        lines = difflib.unified_diff(self.old.splitlines(), self.new.splitlines(), lineterm="", n=2)
        return [line for line in lines if not line.startswith(("---", "+++"))]


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def change_of(call: ToolCallStarted) -> FileChange | None:
    """The change a write or edit tool call makes, when its input says."""
    data = call.input or {}
    path = _text(data.get("path")) or _text(data.get("file_path"))
    if path is None:
        return None
    content = _text(data.get("content"))
    if content is not None:
        return FileChange(path, "", content)
    old = _text(data.get("old_text")) or _text(data.get("old_string"))
    new = _text(data.get("new_text"))
    new = new if new is not None else _text(data.get("new_string"))
    if old is not None and new is not None:
        return FileChange(path, old, new)
    edits = data.get("edits")
    if isinstance(edits, list):
        pairs = [
            (_text(e.get("old_string")) or "", _text(e.get("new_string")) or "")
            for e in edits
            if isinstance(e, dict)
        ]
        if pairs:
            return FileChange(path, "\n".join(o for o, _ in pairs), "\n".join(n for _, n in pairs))
    return None


def render_diff(change: FileChange, limit: int | None = None) -> Text:
    """The diff in colour, cut to `limit` lines with a note saying how to see it all."""
    from rich.text import Text

    lines = change.diff_lines()
    shown = lines if limit is None else lines[:limit]
    out = Text(f"  {change.path}\n", style="bold")
    for line in shown:
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else "cyan"
        out.append(f"  {line}\n", style=style if line[:1] in "+-@" else "dim")
    if len(shown) < len(lines):
        out.append(f"  … {len(lines) - len(shown)} more lines (/diff shows them)\n", style="dim")
    out.rstrip()
    return out
