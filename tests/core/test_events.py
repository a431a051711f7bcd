"""The event model: plain dataclasses in-process, checked by pydantic where JSON comes in."""

from __future__ import annotations

import subprocess
import sys

import pytest

from avatar.core.events import (
    BaseEvent,
    FileDiff,
    Notice,
    Plan,
    PlanEntry,
    SessionStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
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
        ToolCallFinished(id="t1", diffs=[FileDiff(path="a.py", old_text=None, new_text="x")]),
    ],
)
def test_an_event_survives_its_json_line(event: object) -> None:
    line = event.to_json()  # type: ignore[attr-defined]
    assert line.startswith('{"v":1,"replay":')
    assert parse_event(line) == event


# The `chat --json` lines, byte for byte as the pydantic models wrote them before the events
# became dataclasses (checked against those models when they changed): every field, in order.
@pytest.mark.parametrize(
    ("event", "line"),
    [
        (TextDelta(text="héllo"), '{"v":1,"replay":false,"type":"text","text":"héllo"}'),
        (
            ToolCallStarted(id="t1", name="Read", kind="read", input={"path": "a.py"}),
            '{"v":1,"replay":false,"type":"tool_call_started","id":"t1","name":"Read",'
            '"title":null,"kind":"read","input":{"path":"a.py"},"diffs":[]}',
        ),
        (
            Usage(input_tokens=3, cost_usd=0.5),
            '{"v":1,"replay":false,"type":"usage","input_tokens":3,"output_tokens":null,'
            '"cache_read_tokens":null,"cache_write_tokens":null,"cost_usd":0.5,'
            '"context_used":null,"context_size":null}',
        ),
        (
            Plan(entries=[PlanEntry(content="read", status="done")]),
            '{"v":1,"replay":false,"type":"plan","entries":'
            '[{"content":"read","status":"done","priority":null}]}',
        ),
        (TurnFinished(), '{"v":1,"replay":false,"type":"turn_finished","stop_reason":"end_turn"}'),
    ],
)
def test_the_json_line_of_an_event_is_the_published_one(event: BaseEvent, line: str) -> None:
    assert event.to_json() == line


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
    """Importing pydantic (70–130 ms here) came before a one-shot's agent could start."""
    code = (
        "import sys, avatar.core.events, avatar.bridges.claude.bridge\n"
        "print('pydantic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr
