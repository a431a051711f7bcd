"""Edits and writes as diffs with the file's own line numbers, whatever agent made them.

Two sources name a change, and the screen takes the better one:
- the agent's own report (`FileDiff` on a tool call's events): ACP `diff` content from
  claude-agent-acp, codex-acp and Gemini, with the line it starts at when a tool-call location
  says; a later report replaces an earlier one;
- the tool call's input, the same way across agents give or take the key: the native agent's
  `write {path, content}` and `edit {path, old_text, new_text}`, Claude Code's
  `Write {file_path, content}`, `Edit {file_path, old_string, new_string}` and
  `MultiEdit {file_path, edits: [...]}`.
A snippet whose line the agent does not give is found in the file (`locate`): after the edit
its new text is there, before it (the permission menu) its old text; found, it grows to whole
lines with a little context, so the numbers are the file's. A write asked about before it is
made is shown against the file on disk (`against_disk`): what it would replace.

Every edit of the REPL run is kept in order (`EditLog`): `/diff` shows them all, `/diff N` one.
The web page (`avatar.server.web.stream`) shows the same changes.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from avatar.core.fileio import open_regular

if TYPE_CHECKING:
    from avatar.core.events import FileDiff, ToolCallStarted

CONTEXT = 2  # lines of context around a change, as the agents' own diffs show
_READ_LIMIT = 4 * 1024 * 1024  # a file bigger than this is not searched for the snippet

Sign = Literal[" ", "-", "+"]


@dataclass(frozen=True)
class Row:
    """One line of a diff: its sign, its index in the old and the new text (None: not there),
    and its text."""

    sign: Sign
    old_i: int | None
    new_i: int | None
    text: str

    @property
    def index(self) -> int:
        """Its index in the text it is shown from: the old one for a removed line."""
        return (self.old_i if self.sign == "-" else self.new_i) or 0


@dataclass(frozen=True)
class FileChange:
    """One change to one file: the text before and after (a new file has no `old`), whole or
    a snippet starting at file line `line` (None: not known)."""

    path: str
    old: str
    new: str
    line: int | None = None

    def number(self, row: Row) -> int | None:
        """The line of the file `row` is (of the old file for a removed line), when known."""
        return None if self.line is None else self.line + row.index

    def hunks(self, context: int = CONTEXT) -> list[list[Row]]:
        """The changed lines with `context` lines around them, as hunks of rows."""
        old, new = self.old.splitlines(), self.new.splitlines()
        out: list[list[Row]] = []
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        for group in matcher.get_grouped_opcodes(context):
            rows: list[Row] = []
            for tag, i1, i2, j1, j2 in group:
                if tag == "equal":
                    rows += [Row(" ", i1 + k, j1 + k, new[j1 + k]) for k in range(i2 - i1)]
                    continue
                rows += [Row("-", i, None, old[i]) for i in range(i1, i2)]
                rows += [Row("+", None, j, new[j]) for j in range(j1, j2)]
            out.append(rows)
        return out


@dataclass(frozen=True)
class Edit:
    """What one tool call changed: its changes, in the order the agent reported them."""

    title: str
    changes: tuple[FileChange, ...]

    def counts(self) -> tuple[int, int]:
        """Lines added and removed."""
        rows = [r for c in self.changes for h in c.hunks() for r in h]
        return sum(r.sign == "+" for r in rows), sum(r.sign == "-" for r in rows)


@dataclass
class EditLog:
    """The edits of this REPL run, numbered from 1 in the order they were made."""

    edits: list[Edit] = field(default_factory=list)
    _by_call: dict[str, int] = field(default_factory=dict)

    def record(self, call_id: str, edit: Edit) -> int:
        """Keep `edit` (made by tool call `call_id`; a call reported again replaces its edit);
        its number."""
        at = self._by_call.get(call_id)
        if at is None:
            self.edits.append(edit)
            at = self._by_call[call_id] = len(self.edits) - 1
        else:
            self.edits[at] = edit
        return at + 1

    def number_of(self, call_id: str) -> int | None:
        """The number of the edit tool call `call_id` made, if it made one."""
        at = self._by_call.get(call_id)
        return None if at is None else at + 1


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def changes_of(call: ToolCallStarted) -> list[FileChange]:
    """The changes a write or edit tool call makes, when its input says."""
    return changes_in(call.input or {})


def changes_in(data: Mapping[str, Any]) -> list[FileChange]:
    """The changes a write or edit tool's input `data` names (see the module docstring); a
    write is its whole new content, with no old text and no line."""
    path = _text(data.get("path")) or _text(data.get("file_path"))
    if path is None:
        return []
    content = _text(data.get("content"))
    if content is not None:
        return [FileChange(path, "", content)]
    old = _text(data.get("old_text")) or _text(data.get("old_string"))
    new = _text(data.get("new_text"))
    new = new if new is not None else _text(data.get("new_string"))
    if old is not None and new is not None:
        return [FileChange(path, old, new)]
    edits = data.get("edits")
    return (
        [
            FileChange(path, _text(e.get("old_string")) or "", _text(e.get("new_string")) or "")
            for e in edits
            if isinstance(e, dict)
        ]
        if isinstance(edits, list)
        else []
    )


def diffs_in(data: Any) -> list[FileDiff]:
    """The changes a write or edit tool's input names, as an agent would report them (a
    write's old text unknown: None)."""
    from avatar.core.events import FileDiff

    if not isinstance(data, Mapping):
        return []
    return [FileDiff(c.path, c.old if c.old or c.line else None, c.new) for c in changes_in(data)]


def against_disk(change: FileChange, cwd: Path) -> FileChange:
    """A whole file's new content (no old text, no line) as a change of the file as it is on
    disk now, before the change is made: what a write would replace. Unchanged when the file
    is not there (a new file), is too big, or is not a whole content."""
    if change.old or change.line is not None:
        return change
    path = Path(change.path) if Path(change.path).is_absolute() else cwd / change.path
    before = _read_shown(path)
    return change if before is None else replace(change, old=before, line=1)


def _read_shown(path: Path) -> str | None:
    """The text of the file at `path`, to draw a diff; None when it is not a regular file of
    at most `_READ_LIMIT` bytes. The agent may swap the file for a FIFO or a device while the
    REPL reads it (avatar reads outside the walls): neither is opened in a way that blocks or
    acts (`open_regular`)."""
    try:
        with open_regular(path) as f:
            data = f.read(_READ_LIMIT + 1)
    except OSError:
        return None
    return None if len(data) > _READ_LIMIT else data.decode("utf-8", errors="replace")


def changes_reported(diffs: list[FileDiff]) -> list[FileChange]:
    """The changes an agent reported (`diff` content), as the screen shows them."""
    return [FileChange(d.path, d.old_text or "", d.new_text, d.line) for d in diffs]


def shown_from(change: FileChange, cwd: Path) -> FileChange:
    """`change` with its path as a person reads it: relative to `cwd` when the file is in it."""
    path = Path(change.path)
    if path.is_absolute() and path.is_relative_to(cwd):
        return replace(change, path=str(path.relative_to(cwd)))
    return change


def locate(change: FileChange, cwd: Path) -> FileChange:
    """`change` with the file line it starts at: a new file's text starts at line 1; a
    snippet is found in the file (its new text, else its old) and widened to whole lines with
    `CONTEXT` lines around it. Unchanged when the line is known already or not found."""
    if change.line is not None:
        return change
    if not change.old:
        return replace(change, line=1)
    old, new = change.old, change.new
    if old.endswith("\n") and new.endswith("\n"):  # whole lines (codex's hunks): search them
        old, new = old[:-1], new[:-1]
    path = Path(change.path) if Path(change.path).is_absolute() else cwd / change.path
    text = _read_shown(path)
    if text is None:
        return change
    for found in (new, old):
        at = text.find(found) if found else -1
        if at < 0:
            continue
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at + len(found))
        end = len(text) if end < 0 else end
        before = text[:start].splitlines(keepends=True)[-CONTEXT:] if start else []
        after = text[end + 1 :].splitlines(keepends=True)[:CONTEXT] if end < len(text) else []
        head = "".join(before) + text[start:at]
        tail = text[at + len(found) : end] + "\n" + "".join(after)
        line = text.count("\n", 0, start) + 1 - len(before)
        return replace(change, old=head + old + tail, new=head + new + tail, line=line)
    return change
