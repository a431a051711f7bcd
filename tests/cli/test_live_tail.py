"""The live tail (the block of the answer still streaming, drawn above the prompt) is cut by
terminal cells, not characters: a line of wide characters (CJK, emoji) stays within the width
and the tail within its rows (before: 59 CJK characters made a 118-cell line, the tail twice
its rows), and an emoji with a skin tone or joined by ZWJs is one glyph of two cells in it,
kept whole (the prompt draws it so: `avatar.cli.repl.glyphs`; it once lost its tone).
"""

from __future__ import annotations

import io

from avatar.cli.output.cells import cell_width
from avatar.cli.repl.screen import Screen
from avatar.core.events import TextDelta


def tail_of(text: str, width: int) -> list[str]:
    screen = Screen(io.StringIO(), live_tail=True)
    screen.on_event(TextDelta(text=text))
    return screen.live_tail(width).split("\n")


def test_wide_characters_keep_the_tail_within_its_width_and_rows() -> None:
    lines = tail_of("你好世界" * 60, 59)
    assert len(lines) == 4
    assert all(cell_width(line) <= 59 for line in lines), lines
    assert all(cell_width(line) >= 58 for line in lines[:-1]), lines  # full rows


def test_a_skin_tone_or_a_zwj_joined_emoji_is_one_glyph_in_the_tail() -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    (line,) = tail_of(f"ok \U0001f44d\U0001f3fd and {family} done", 59)
    assert line == f"ok \U0001f44d\U0001f3fd and {family} done"
    pair = "\U0001f44d\U0001f3fd" + family  # 4 cells: two pairs to a row of 9
    assert tail_of(pair * 10, 9)[0] == pair * 2
