"""An answer's paragraph stays whole on the REPL's screen when the agent says something the
screen shows nothing of in the middle of it: its commands, the session's title, its mode, a
plan (claude-agent-acp announces its commands while the first answer streams; the paragraph
"Saw the listing." was printed as "Saw" above "the listing.")."""

from __future__ import annotations

import io

import pytest

from avatar.cli.repl.screen import Screen
from avatar.core.events import (
    BaseEvent,
    CommandsAvailable,
    ModeChanged,
    Plan,
    TextDelta,
    TitleChanged,
    TurnFinished,
)


@pytest.mark.parametrize(
    "between",
    [
        CommandsAvailable(commands=["/compact"]),
        TitleChanged(title="Listing"),
        ModeChanged(mode="plan"),
        Plan(entries=[]),
    ],
    ids=lambda e: type(e).__name__,
)
def test_a_status_event_mid_answer_does_not_cut_the_paragraph(between: BaseEvent) -> None:
    out = io.StringIO()
    screen = Screen(out, live_tail=True)
    screen.begin_turn()
    for event in (TextDelta(text="Saw"), between, TextDelta(text=" the listing."), TurnFinished()):
        screen.on_event(event)
    lines = [line.strip() for line in out.getvalue().splitlines() if line.strip()]
    assert lines[0] == "Saw the listing.", lines
