"""A terminal that draws each glyph in the cells a modern terminal gives it (a skin-toned thumb,
a family joined by zero-width joiners, a flag: two), for what prompt-toolkit writes: tmux 3.3a
and pyte count such an emoji cell by code point, as prompt-toolkit does, so they cannot show
where its line wraps on a terminal that draws the glyph whole.

It reads the little prompt-toolkit's renderer writes: text, CR, LF, cursor moves (CSI A B C D
G H), erasing (CSI K J) and styles (CSI m, ignored); a glyph that does not fit at the end of
a row goes on the next one, as a terminal's automatic margins put it."""

from __future__ import annotations

import io
import re

from prompt_toolkit.data_structures import Size
from prompt_toolkit.output.vt100 import Vt100_Output

from avatar.cli.output.cells import glyphs

_SEQUENCE = re.compile(r"\x1b\[([?0-9;]*)([A-Za-z])|\x1b[()][0-9A-Za-z]|\x1b[=>78]|[\r\n\x07\x08]")


class GlyphTerminal:
    """A screen of `rows` × `columns` cells, fed with what a program writes."""

    def __init__(self, columns: int, rows: int = 12) -> None:
        self.columns, self.rows = columns, rows
        self.cells: list[list[str]] = [[" "] * columns for _ in range(rows)]
        self.x = self.y = 0
        self.pending = ""  # text not drawn yet: a glyph may continue in the next write

    def feed(self, data: str) -> None:
        """Draw `data` (everything written so far need not be fed at once)."""
        at = 0
        for match in _SEQUENCE.finditer(data):
            self.pending += data[at : match.start()]
            self._draw()
            self._control(match)
            at = match.end()
        self.pending += data[at:]

    def line(self, row: int) -> str:
        """Row `row` as text, without the cells a wide glyph's second half fills."""
        self._draw()
        return "".join(c for c in self.cells[row] if c != "").rstrip()

    @property
    def cursor(self) -> tuple[int, int]:
        """The cursor's (row, column)."""
        self._draw()
        return self.y, self.x

    def _draw(self) -> None:
        text, self.pending = self.pending, ""
        for glyph in glyphs(text):
            if glyph.cells == 0:
                continue
            if self.x + glyph.cells > self.columns:
                self.x, self.y = 0, min(self.y + 1, self.rows - 1)
            self.cells[self.y][self.x] = text[glyph.start : glyph.end]
            for i in range(1, glyph.cells):
                self.cells[self.y][self.x + i] = ""
            self.x += glyph.cells

    def _control(self, match: re.Match[str]) -> None:
        token = match.group(0)
        if token == "\r":
            self.x = 0
        elif token == "\n":
            self.y = min(self.y + 1, self.rows - 1)
        elif token == "\x08":
            self.x = max(self.x - 1, 0)
        elif match.group(2):
            self._csi(match.group(1), match.group(2))

    def _csi(self, args: str, final: str) -> None:
        numbers = [int(n) for n in args.lstrip("?").split(";") if n.isdigit()]
        n = numbers[0] if numbers else 1
        if final == "A":
            self.y = max(self.y - n, 0)
        elif final == "B":
            self.y = min(self.y + n, self.rows - 1)
        elif final == "C":
            self.x = min(self.x + n, self.columns - 1)
        elif final == "D":
            self.x = max(self.x - n, 0)
        elif final == "G":
            self.x = n - 1
        elif final == "H":
            row, column = [*numbers, 1, 1][:2]
            self.y, self.x = row - 1, column - 1
        elif final == "K":
            self.cells[self.y][self.x :] = [" "] * (self.columns - self.x)
        elif final == "J":
            for row in range(self.y + 1, self.rows):
                self.cells[row] = [" "] * self.columns
            self.cells[self.y][self.x :] = [" "] * (self.columns - self.x)


class GlyphOutput(Vt100_Output):
    """prompt-toolkit's terminal output, `columns` wide, written into a `GlyphTerminal`."""

    def __init__(self, columns: int, rows: int = 12) -> None:
        self.terminal = GlyphTerminal(columns, rows)
        self._written = io.StringIO()
        super().__init__(
            self._written,  # type: ignore[arg-type]
            lambda: Size(rows=rows, columns=columns),
            term="xterm",
            enable_cpr=False,
        )

    def flush(self) -> None:
        """Write what is buffered, and draw it on the terminal."""
        super().flush()
        self.terminal.feed(self._written.getvalue())
        self._written.seek(0)
        self._written.truncate()
