"""An answer's emoji take the cells a terminal gives them (issue 33: an emoji sequence wrapped a
line early): a family joined by zero-width joiners and a thumb with a skin tone are two cells
each, so a line of them fits the width it fills. rich before 15 counted the family as six, and
pyproject's floor is the version that counts it right."""

from __future__ import annotations

from rich.console import Console

from avatar.cli.output.markdown import render_block
from avatar.core.markdown_blocks import Block


def _lines(text: str, width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None, legacy_windows=False)
    console.print(render_block(Block("paragraph", text)))
    return [line for line in console.export_text().splitlines() if line.strip()]


def test_joined_and_toned_emoji_take_two_cells_each() -> None:
    family, thumb = "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\U0001f44d\U0001f3fd"
    text = "ab " + " ".join([family, thumb] * 4)  # 3 + 8 emoji of 2 cells + 7 spaces = 26
    assert _lines(text, 26) == [text]
