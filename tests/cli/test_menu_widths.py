"""The pickers measure in a terminal's cells too (issue 33: grapheme-correct widths): a session
title or a turn's words made of emoji or CJK keep the columns after them where an ASCII one
does, and a preview line fits the width; before, they were cut and padded by code points, so a
row of toned thumbs ran twice as wide as its column and pushed the age and the count out."""

from __future__ import annotations

from avatar.cli.output.cells import cell_width
from avatar.cli.repl.picker import row as session_row
from avatar.cli.repl.preview import preview_lines
from avatar.cli.repl.rewind import row as turn_row
from avatar.library.checkpoints.turns import Turn
from avatar.sessions.types import SessionInfo, Transcript, TranscriptMessage

THUMB = "\U0001f44d\U0001f3fd"
FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
TITLES = ["fix the parser", THUMB * 30, "日本語のテスト" * 10, f"ok {FAMILY} " * 12]


def test_a_session_row_keeps_its_columns_whatever_its_title() -> None:
    rows = [session_row(SessionInfo(id="s1", provider="codex", title=t)) for t in TITLES]
    assert {cell_width(r) for r in rows} == {cell_width(rows[0])}, rows
    assert {cell_width(r[: r.rindex(" msgs")]) for r in rows} == {cell_width(rows[0]) - 5}


def test_a_rewind_row_fits_sixty_columns_whatever_its_words() -> None:
    rows = [turn_row(Turn(number=3, prompt=t), 60) for t in TITLES]
    assert {cell_width(r) for r in rows} == {cell_width(rows[0])}, rows
    assert cell_width(rows[0]) < 60


def test_preview_lines_fit_the_width_in_cells() -> None:
    info = SessionInfo(id="s1", provider="native")
    said = [TranscriptMessage(role="user", text=t) for t in TITLES]
    lines = preview_lines(Transcript(info=info, messages=said), 40)
    assert all(cell_width(line) <= 40 for line in lines), lines
    assert all(cell_width(line) >= 39 for line in lines[1:]), lines  # cut at the width
