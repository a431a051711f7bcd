"""The event model: plain dataclasses in-process, checked by pydantic where JSON comes in."""

from __future__ import annotations

import subprocess
import sys

import pytest

from avatar.events import (
    Notice,
    Plan,
    PlanEntry,
    SessionStarted,
    TextDelta,
    Usage,
    parse_event,
)


@pytest.mark.parametrize(
    "event",
    [
        TextDelta(text="héllo"),
        Plan(entries=[PlanEntry(content="read", status="done")]),
        Usage(input_tokens=3, cost_usd=0.5, context_used=10, context_size=100),
        SessionStarted(session_id="s1", provider="claude", how="resumed", replay=True),
        Notice(message="careful", level="warning"),
    ],
)
def test_an_event_survives_its_json_line(event: object) -> None:
    line = event.to_json()  # type: ignore[attr-defined]
    assert line.startswith('{"v":1,"replay":')
    assert parse_event(line) == event


@pytest.mark.parametrize(
    "line",
    [
        '{"v":1,"type":"text","text":"a","colour":"red"}',  # a key no event has
        '{"v":1,"type":"sparkle"}',  # no such event
        '{"v":1,"type":"text"}',  # its text is missing
        '{"v":1,"type":"usage","input_tokens":"many"}',
        "[1, 2]",
    ],
)
def test_a_line_that_is_no_event_is_refused(line: str) -> None:
    with pytest.raises(ValueError):
        parse_event(line)


def test_events_and_the_claude_bridge_load_no_pydantic() -> None:
    """pydantic was ~90 ms of every one-shot before the agent could start (benchmarks)."""
    code = "import sys, avatar.events, avatar.bridges.claude\nprint('pydantic' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr
