"""prompt-toolkit drawing whole glyphs: the input box, the prompt above it and the status line
take the cells a terminal gives a skin-toned thumb, a family of emoji joined by zero-width
joiners or a flag (two), as avatar measures them (`avatar.cli.output.cells`), not the four
and six prompt-toolkit counts, so a line of them wraps where the terminal wraps it and the
cursor stands where the text ends.

prompt-toolkit lays a line out one code point at a time (each a cell of the screen it draws,
as wide as wcwidth says that code point alone is), which no width function can mend: the
width of a code point after a joiner depends on what came before it. So each glyph of more
than one code point, or whose code point prompt-toolkit measures otherwise, is handed to the
layout as one stand-in character as wide as the glyph (`to_glyphs`, and `Glyphs` for the input
box, whose cursor positions it maps), with a style mark naming the glyph; the screen's cell
for that mark is the glyph itself (`install`), which is what reaches the terminal.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from prompt_toolkit.layout.processors import Processor, Transformation

from avatar.cli.output.cells import Glyph, glyphs

if TYPE_CHECKING:
    from prompt_toolkit.formatted_text import StyleAndTextTuples
    from prompt_toolkit.key_binding import KeyBindingsBase, KeyPressEvent
    from prompt_toolkit.layout.processors import TransformationInput
    from prompt_toolkit.layout.screen import Char

#: The style mark of a stand-in: `[glyph:2:1f44d-1f3fd]`, the glyph's cells and its code
#: points in hex (a glyph may hold a space, which a style may not).
_MARK = "[glyph:"
#: A stand-in of each width: prompt-toolkit measures "x" as one cell, U+3000 as two.
_STAND_IN = {1: "x", 2: "\u3000"}


def install() -> None:
    """Make prompt-toolkit's screen draw a stand-in's cell as the glyph it stands for (once;
    a prompt-toolkit without the screen's cell cache keeps its own widths)."""
    from prompt_toolkit.layout import screen

    cache = getattr(screen, "_CHAR_CACHE", None)
    if cache is None or getattr(cache, "get_value", None) is _cell:
        return
    cache.get_value = _cell


def _cell(char: str, style: str) -> Char:
    """The screen's cell for `char` drawn in `style`: the glyph a stand-in's mark names."""
    from prompt_toolkit.layout.screen import Char

    at = style.find(_MARK)
    if at < 0:
        return Char(char, style)
    cells, points = style[at + len(_MARK) : style.index("]", at)].split(":")
    made = Char("".join(chr(int(point, 16)) for point in points.split("-")), style)
    made.width = int(cells)  # (the stand-in's, which the layout used)
    return made


def _needs_stand_in(text: str, cells: int) -> bool:
    from prompt_toolkit.utils import get_cwidth

    if cells not in _STAND_IN or any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text):
        return False  # (control characters: prompt-toolkit shows them its own way)
    return len(text) > 1 or get_cwidth(text) != cells


@lru_cache(maxsize=64)
def _stand_ins(text: str) -> tuple[Glyph, ...]:
    """The glyphs of `text` that need a stand-in (the same lines are drawn again and again:
    each redraw of the prompt, a few a second while a turn runs)."""
    if text.isascii():
        return ()
    return tuple(g for g in glyphs(text) if _needs_stand_in(text[g.start : g.end], g.cells))


def _mapped(fragments: StyleAndTextTuples) -> tuple[StyleAndTextTuples, list[int]] | None:
    """`fragments` with their glyphs as stand-ins, and where each character of the text went
    (its index in the new text); None when nothing needs a stand-in."""
    if any("[ZeroWidthEscape]" in f[0] for f in fragments):
        return None  # (escape sequences: none in the REPL's text)
    text = "".join(f[1] for f in fragments)
    found = _stand_ins(text)
    if not found:
        return None
    owner: list[int] = []  # each character's fragment
    for n, fragment in enumerate(fragments):
        owner.extend([n] * len(fragment[1]))
    out: StyleAndTextTuples = []
    where: list[int] = []
    shown = 0

    def put(n: int, text: str, style: str | None = None) -> None:
        fragment = fragments[n]
        piece = (fragment[0] if style is None else style, text, *fragment[2:])
        last = out[-1] if out else None
        if style is None and last is not None and last[0] == piece[0] and last[2:] == piece[2:]:
            out[-1] = (last[0], last[1] + text, *last[2:])
        else:
            out.append(piece)

    at = 0
    for glyph in found:
        for i in range(at, glyph.start):
            put(owner[i], text[i])
            where.append(shown)
            shown += 1
        n = owner[glyph.start]
        points = "-".join(f"{ord(c):x}" for c in text[glyph.start : glyph.end])
        put(n, _STAND_IN[glyph.cells], f"{fragments[n][0]} {_MARK}{glyph.cells}:{points}]")
        where.extend([shown] * (glyph.end - glyph.start))
        shown += 1
        at = glyph.end
    for i in range(at, len(text)):
        put(owner[i], text[i])
        where.append(shown)
        shown += 1
    return out, where


def to_glyphs(fragments: StyleAndTextTuples) -> StyleAndTextTuples:
    """Formatted text (the prompt, the status line) with its glyphs as stand-ins."""
    mapped = _mapped(fragments)
    return fragments if mapped is None else mapped[0]


class Glyphs(Processor):
    """The input box's text with its glyphs as stand-ins; a cursor inside a glyph (the arrow
    keys step by code point) shows before it."""

    def apply_transformation(self, transformation_input: TransformationInput) -> Transformation:
        """The line's fragments with stand-ins, and the cursor positions mapped to them."""
        fragments = transformation_input.fragments
        mapped = _mapped(fragments)
        if mapped is None:
            return Transformation(fragments)
        shown, where = mapped
        length, back = len(where), {}
        for source, display in reversed(list(enumerate(where))):
            back[display] = source
        total = len(where) and where[-1] + 1

        def to_display(i: int) -> int:
            return where[i] if i < length else total + i - length

        def to_source(i: int) -> int:
            return back.get(i, length + i - total)

        return Transformation(shown, to_display, to_source)


def glyph_keys() -> KeyBindingsBase:
    """Left, Right (Ctrl-B, Ctrl-F), Backspace and Delete over a glyph of several code points
    (a toned thumb, a joined family, a flag) take it whole, as a terminal shows it: prompt-
    toolkit's own step one code point, into the glyph, where typed text splits it and
    Backspace leaves a thumb without its tone. Elsewhere its own bindings act."""
    from prompt_toolkit.application.current import get_app
    from prompt_toolkit.filters import Condition
    from prompt_toolkit.key_binding import KeyBindings

    bindings = KeyBindings()

    def steps() -> tuple[int, int]:
        """How far the cursor moves back and forward to the next glyph's edge on its line."""
        document = get_app().current_buffer.document
        line, at = document.current_line, document.cursor_position_col
        if line.isascii():
            return 1, 1
        edges = [g.start for g in glyphs(line)] + [len(line)]
        back = at - max((e for e in edges if e < at), default=at - 1)
        forward = min((e for e in edges if e > at), default=at + 1) - at
        return back, forward

    wide_back = Condition(lambda: steps()[0] > 1)
    wide_forward = Condition(lambda: steps()[1] > 1)

    @bindings.add("left", filter=wide_back)
    @bindings.add("c-b", filter=wide_back)  # (Emacs' keys for them, prompt-toolkit's default)
    def _left(event: KeyPressEvent) -> None:
        event.current_buffer.cursor_position -= steps()[0]

    @bindings.add("right", filter=wide_forward)
    @bindings.add("c-f", filter=wide_forward)
    def _right(event: KeyPressEvent) -> None:
        event.current_buffer.cursor_position += steps()[1]

    @bindings.add("backspace", filter=wide_back)
    def _backspace(event: KeyPressEvent) -> None:
        event.current_buffer.delete_before_cursor(steps()[0])

    @bindings.add("delete", filter=wide_forward)
    def _delete(event: KeyPressEvent) -> None:
        event.current_buffer.delete(steps()[1])

    return bindings
