"""Streamed markdown cut into blocks: a paragraph, list, table, quote, heading or code block is
handed out whole once it is complete, and the block in progress is kept as a live tail.

This is the streaming half of drawing answers as Claude Code and Codex do: each complete line
is looked at once (no re-parse of the answer per token), and a block is complete when what
follows cannot belong to it — a blank line after a paragraph, a closing fence, a line that is
not a table row after a table, text at the margin after a list and a blank line. Blank lines
between the items of a list are dropped, so a loose list is drawn as tight as a tight one.
Rendering a block is the caller's job: the terminal's `avatar.cli.output.markdown` (rich), the
web page's `avatar.library.export.markdown` (HTML). Pure, and imports nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["paragraph", "list", "table", "quote", "heading", "rule", "code"]

_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:\s+|$)")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")
_RULE = re.compile(r"^ {0,3}(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)")


@dataclass(frozen=True)
class Block:
    """One complete block of markdown source; `lang` names a code block's language."""

    kind: Kind
    text: str
    lang: str = ""


class BlockSplitter:
    """Feed it the answer as it streams; it returns the blocks that each piece completes."""

    def __init__(self) -> None:
        self._partial = ""  # the line being streamed, without its newline yet
        self._lines: list[str] = []  # complete lines of the block in progress
        self._kind: Kind | None = None
        self._fence = ""  # the fence that closes the code block in progress
        self._lang = ""
        self._blank = False  # a blank line ended the list's last item (the list may go on)

    def feed(self, text: str) -> list[Block]:
        """Take the next piece of the answer; the blocks it completes, in order."""
        *complete, self._partial = (self._partial + text).split("\n")
        done: list[Block] = []
        for line in complete:
            done.extend(self._line(line))
        return done

    def flush(self) -> list[Block]:
        """The end of the answer (or of a stretch of it): whatever is held, as blocks."""
        done: list[Block] = []
        if self._partial:
            line, self._partial = self._partial, ""
            done.extend(self._line(line))
        done.extend(self._close())
        return done

    @property
    def tail(self) -> str:
        """The markdown source of the block in progress (what is not drawn yet)."""
        if not self._lines:
            return self._partial
        return "\n".join([*self._lines, self._partial]).rstrip("\n")

    @property
    def line(self) -> str:
        """The line being streamed (else the last complete line not drawn yet)."""
        return self._partial or (self._lines[-1] if self._lines else "")

    def _close(self) -> list[Block]:
        if self._kind is None:
            return []
        block = Block(self._kind, "\n".join(self._lines), self._lang)
        self._kind, self._lines, self._lang, self._blank = None, [], "", False
        return [block]

    def _start(self, kind: Kind, line: str) -> list[Block]:
        done = self._close()
        self._kind, self._lines = kind, [line]
        return done

    def _line(self, line: str) -> list[Block]:
        if self._kind == "code":
            if line.strip().startswith(self._fence) and not line.strip().strip(self._fence[0]):
                return self._close()
            self._lines.append(line)
            return []
        stripped = line.strip()
        if self._kind == "list" and (not stripped or _ITEM.match(line) or line[:1].isspace()):
            if not stripped:
                self._blank = True  # held: the next line says whether the list goes on
            else:
                self._blank = False
                self._lines.append(line)
            return []
        if not stripped:
            return self._close()
        fence = _FENCE.match(line)
        if fence:
            done = self._close()
            self._kind, self._fence, self._lang = "code", fence.group(1), fence.group(2)
            return done
        if _HEADING.match(line):
            return [*self._start("heading", line), *self._close()]
        if _RULE.match(line) and self._kind != "paragraph":  # `---` under text is a heading
            return [*self._start("rule", line), *self._close()]
        if _ITEM.match(line):
            return self._start("list", line)
        if stripped.startswith("|"):
            if self._kind == "table":
                self._lines.append(line)
                return []
            return self._start("table", line)
        if stripped.startswith(">"):
            if self._kind == "quote":
                self._lines.append(line)
                return []
            return self._start("quote", line)
        if self._kind in ("paragraph", "quote") or (self._kind == "list" and not self._blank):
            self._lines.append(line)  # a paragraph's next line, or a lazy continuation
            return []
        return self._start("paragraph", line)
