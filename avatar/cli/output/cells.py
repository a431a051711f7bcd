"""How many terminal cells text takes: avatar's one measure, rich's (`rich.cells`), which
draws the answers. It counts what a terminal draws as one glyph (a grapheme: an emoji with a
skin tone, a family joined by zero-width joiners, a flag, a letter with its accents) as the
cells that glyph takes, where prompt-toolkit's per-character count gives a toned thumb four
cells and a family six. The input box draws with it too (`avatar.cli.repl.glyphs`).

rich is imported on first use: `avatar --version` and the plain listings never load it."""

from __future__ import annotations

from typing import NamedTuple

# Regional indicators: rich measures a flag as its two letters, one cell each; a terminal
# draws the pair as one glyph, which is kept whole here.
_FLAG_LETTERS = range(0x1F1E6, 0x1F200)


class Glyph(NamedTuple):
    """One glyph of a text: where it starts and ends in the text, and its cells."""

    start: int
    end: int
    cells: int


def cell_width(text: str) -> int:
    """The cells `text` takes on a terminal."""
    from rich.cells import cell_len

    return cell_len(text)


def glyphs(text: str) -> list[Glyph]:
    """`text` cut into the glyphs a terminal draws, each with its cells (together: every
    character of `text`, in order)."""
    from rich.cells import split_graphemes

    spans, _ = split_graphemes(text)
    out: list[Glyph] = []
    letter = False  # the last glyph is a flag's first letter, waiting for its second
    for start, end, cells in spans:
        flag = end - start == 1 and ord(text[start]) in _FLAG_LETTERS
        if flag and letter:
            out[-1] = Glyph(out[-1].start, end, out[-1].cells + cells)
            letter = False
            continue
        letter = flag
        out.append(Glyph(start, end, cells))
    return out


def cut(line: str, width: int) -> list[str]:
    """`line` cut into pieces of at most `width` cells, never inside a glyph (a glyph wider
    than `width` stands alone)."""
    pieces, start, used = [], 0, 0
    for glyph in glyphs(line):
        if used + glyph.cells > width and glyph.start > start:
            pieces.append(line[start : glyph.start])
            start, used = glyph.start, 0
        used += glyph.cells
    return [*pieces, line[start:]]


def clip(text: str, width: int, *, mark: str = "…") -> str:
    """`text` as it fits in `width` cells: whole, or cut at a glyph's end with `mark` after."""
    if cell_width(text) <= width:
        return text
    room = width - cell_width(mark)
    return (cut(text, room)[0] if room > 0 else "") + mark


def pad(text: str, width: int) -> str:
    """`text` in exactly `width` cells: clipped (`clip`), then filled with spaces."""
    shown = clip(text, width)
    return shown + " " * (width - cell_width(shown))
