"""The REPL's input box draws an emoji in the cells a terminal gives it (issue 33: "a skin-tone
emoji wraps a line early"): prompt-toolkit counts a skin-toned thumb four cells and a family
joined by zero-width joiners six, so a line of them wrapped half-way across a terminal that
draws each in two, and the cursor stood cells after the text's end.

The REPL's own prompt (`make_prompt`, on a real engine) is drawn at a fixed width into a
terminal that draws glyphs whole (`tests.support.glyph_terminal`: tmux 3.3a itself draws the
thumb in four cells, so a tmux screen cannot show this), and the rows and the cursor are read
off it."""

from __future__ import annotations

import asyncio
import copy
import io
from pathlib import Path

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input

from avatar.cli.output.cells import cell_width, clip, cut
from avatar.cli.repl.prompt import make_prompt
from avatar.cli.repl.repl import Repl
from avatar.cli.repl.screen import Screen
from avatar.cli.repl.status_line import HINT, TAIL, Part, fit
from avatar.core.config import Settings
from avatar.core.events import TextDelta
from avatar.engine.engine import Engine
from tests.support.glyph_terminal import GlyphOutput, GlyphTerminal

THUMB = "\U0001f44d\U0001f3fd"  # 👍🏽
FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # 👨‍👩‍👧
FLAG = "\U0001f1eb\U0001f1f7"  # 🇫🇷


def _repl(tmp_path: Path) -> Repl:
    (tmp_path / "work").mkdir(exist_ok=True)
    engine = Engine(Settings(), tmp_path / "work", env={"HOME": str(tmp_path)}, home=tmp_path)
    return Repl(engine, Screen(io.StringIO(), live_tail=True))


async def _drawn(repl: Repl, keys: str, columns: int) -> GlyphTerminal:
    """The terminal once the REPL's prompt has drawn what `keys` typed into its box."""
    output = GlyphOutput(columns)
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=output):
        session = make_prompt(repl)
        drawn: asyncio.Future[GlyphTerminal] = asyncio.get_running_loop().create_future()

        def check(app: object) -> None:  # (the screen as drawn: leaving erases the prompt)
            if session.default_buffer.text and not drawn.done():
                drawn.set_result(copy.deepcopy(output.terminal))

        session.app.after_render += check
        pipe.send_text(keys)  # (read at once: the first text drawn is all of it)
        running = asyncio.ensure_future(session.prompt_async())
        screen = await asyncio.wait_for(drawn, 20)
        session.app.exit(result="")
        await running
    return screen


async def test_a_line_of_toned_thumbs_wraps_at_the_terminal_width(tmp_path: Path) -> None:
    # `› ` and 13 thumbs: 28 cells, on one row of 30 (prompt-toolkit counted 54: two rows).
    screen = await _drawn(_repl(tmp_path), THUMB * 13, 30)
    assert screen.line(0) == "› " + THUMB * 13
    assert screen.line(1) == ""
    assert screen.cursor == (0, 28)  # just after the last thumb


async def test_families_and_flags_wrap_where_the_terminal_wraps_them(tmp_path: Path) -> None:
    text = "ok " + (FAMILY + FLAG) * 8  # `› ok ` and 8 × 4 cells: 29 on the first row of 30
    screen = await _drawn(_repl(tmp_path), text, 30)
    assert screen.line(0) == "› ok " + (FAMILY + FLAG) * 6  # (a family does not fit in 1)
    assert screen.line(1) == (FAMILY + FLAG) * 2
    assert screen.cursor == (1, 8)


async def test_the_live_tail_above_the_box_keeps_its_emoji_whole(tmp_path: Path) -> None:
    repl = _repl(tmp_path)
    repl.screen.on_event(TextDelta(text=f"fine {THUMB} and {FAMILY} here"))  # block in progress
    screen = await _drawn(repl, "x", 30)
    assert screen.line(0) == f"fine {THUMB} and {FAMILY} here"
    assert screen.line(1) == "› x"


async def test_arrows_and_backspace_step_over_a_glyph_whole(tmp_path: Path) -> None:
    left, right, backspace = "\x1b[D", "\x1b[C", "\x7f"
    typed = THUMB * 3 + left + "x" + FAMILY + backspace + left + "\x02" + backspace + right
    screen = await _drawn(_repl(tmp_path), typed, 30)
    assert screen.line(0) == "› " + THUMB + "x" + THUMB  # no tone split off, no thumb left bare
    assert screen.cursor == (0, 4)  # after the first thumb


async def test_an_escape_joined_to_a_mark_is_still_shown_not_sent(tmp_path: Path) -> None:
    # A combining mark after ESC makes one glyph of the two: it is left to prompt-toolkit,
    # which shows the ESC as `^[` as it shows any, rather than drawn as a stand-in's glyph
    # (whose ESC prompt-toolkit's output would at least turn into `?`).
    pasted = f"\x1b[200~a\x1b\u0301[31mred {THUMB}\x1b[201~"
    screen = await _drawn(_repl(tmp_path), pasted, 40)
    assert screen.line(0).startswith("› a^[") and f"[31mred {THUMB}" in screen.line(0)


def test_the_status_line_fits_its_width_in_cells() -> None:
    line = fit([Part("idle", HINT), Part("… " + THUMB * 30, TAIL)], 40)
    assert cell_width(line) < 40 and line.startswith("idle")


@pytest.mark.parametrize(
    ("text", "cells"),
    [
        ("plain ascii", 11),
        (THUMB, 2),  # a skin tone joins the thumb
        (FAMILY, 2),  # zero-width joiners join the family
        ("\U0001f469\U0001f3ff\u200d\U0001f527", 2),  # toned and joined: a mechanic
        (FLAG, 2),
        (FLAG * 2, 4),
        ("e\u0301", 1),  # a combining accent
        ("\u0915\u094d\u0937\u093f", 2),  # Devanagari: a conjunct and a vowel sign
        ("漢字", 4),  # CJK: two cells each
        ("\u2764\ufe0f", 2),  # a heart as emoji (VS16)
        ("", 0),
    ],
)
def test_cell_width(text: str, cells: int) -> None:
    assert cell_width(text) == cells


def test_cut_and_clip_never_split_a_glyph() -> None:
    assert cut(f"ab{THUMB}{FAMILY}cd", 3) == ["ab", THUMB, FAMILY + "c", "d"]
    assert cut(f"{FLAG}{FLAG}x", 2) == [FLAG, FLAG, "x"]
    assert clip(f"a{FAMILY}{THUMB}", 4) == f"a{FAMILY}…"
    assert clip("short", 10) == "short"
