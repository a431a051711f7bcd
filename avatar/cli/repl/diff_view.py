"""An edit drawn as the agents' terminals draw one: the file and its counts, then each changed
line with its number in the file, its sign, and its code highlighted for the file's language
on a red or green ground (`avatar.core.diffs` says what changed).

Imports rich: load it only when a diff is drawn.
"""

from __future__ import annotations

from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text

from avatar.cli.output.markdown import CODE_THEME
from avatar.core.diffs import Edit, FileChange, Sign

_GROUND = {"-": "on #3c1618", "+": "on #133a1c", " ": ""}
_SIGN = {"-": "bold red", "+": "bold green", " ": "dim"}


def _highlighted(change: FileChange, text: str) -> list[Text]:
    """`text`'s lines highlighted for the language of the file (colours only, no ground)."""
    lexer = Syntax.guess_lexer(change.path, code=change.new or change.old)
    drawn = Syntax(text, lexer, theme=CODE_THEME).highlight(text)
    plain = Text()
    for start, end, style in ((s.start, s.end, s.style) for s in drawn.spans):
        piece = drawn.plain[start:end]
        colour = style.color if isinstance(style, Style) else None
        plain.append(piece, Style(color=colour) if colour else "")
    if len(plain.plain) < len(text):  # rich's highlight can drop a last newline
        plain.append(text[len(plain.plain) :])
    return list(plain.split("\n", allow_blank=True))


def _rows(change: FileChange) -> list[Text | None]:
    """The lines of one change's diff (None between hunks)."""
    old = _highlighted(change, change.old)
    new = _highlighted(change, change.new)
    out: list[Text | None] = []
    for n, hunk in enumerate(change.hunks()):
        if n:
            out.append(None)
        for row in hunk:
            source = old if row.sign == "-" else new
            code = source[row.index].copy() if row.index < len(source) else Text(row.text)
            out.append(_line(row.sign, change.number(row), code))
    return out


def _line(sign: Sign, number: int | None, code: Text) -> Text:
    # Unknown numbers leave the gutter blank: numbers of the snippet would pass for the file's.
    line = Text()
    line.append(f"{number:>5} " if number is not None else "      ", style="dim")
    line.append(sign, style=_SIGN[sign])
    line.append_text(code)
    if _GROUND[sign]:
        line.stylize(_GROUND[sign], 6)
    return line


def render_edit(edit: Edit, number: int | None = None, limit: int | None = None) -> Text:
    """Edit `number` (None: not made yet) in colour, cut to `limit` lines with a note saying
    how to see it all."""
    added, removed = edit.counts()
    out = Text()
    shown = hidden = 0
    path = None
    for change in edit.changes:
        rows = _rows(change)
        if change.path == path:
            rows = [None, *rows]  # another part of the same file
        else:
            path = change.path
            out.append(f"  {path}", style="bold")
            if len(out) == len(path) + 2:  # the first file: the counts of the whole edit
                out.append(f"  +{added} -{removed}", style="dim")
                out.append(f"  [{number}]" if number is not None else "", style="dim")
            out.append("\n")
        for line in rows:
            if limit is not None and shown >= limit:
                hidden += 1
                continue
            shown += 1
            out.append_text(Text("      ⋮", style="dim") if line is None else line)
            out.append("\n")
    if hidden:
        where = f"/diff {number}" if number is not None else "/diff"
        out.append(f"  … {hidden} more lines ({where} shows them)\n", style="dim")
    out.rstrip()
    return out
