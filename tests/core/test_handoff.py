"""Handoffs keep the task and the newest turns within a budget."""

from __future__ import annotations

from avatar.handoff import build_handoff
from avatar.sessions.types import SessionInfo, ToolCall, Transcript, TranscriptMessage


def _transcript(n: int) -> Transcript:
    msgs = [TranscriptMessage(role="user", text="TASK: port the parser")]
    for i in range(n):
        msgs.append(TranscriptMessage(role="assistant", text=f"step {i} " + "x" * 200))
    msgs.append(
        TranscriptMessage(
            role="assistant", tool_calls=[ToolCall(name="read", input={"path": "a.py"})]
        )
    )
    msgs.append(TranscriptMessage(role="tool", text="y" * 5000))
    return Transcript(info=SessionInfo(id="s1", provider="codex", title="port"), messages=msgs)


def test_small_transcript_is_handed_over_whole() -> None:
    text = build_handoff(_transcript(3))
    assert "codex session (s1, 'port')" in text
    assert "TASK: port the parser" in text
    assert all(f"step {i} " in text for i in range(3))
    assert "[tool call read]" in text
    assert "left out" not in text


def test_large_transcript_keeps_task_and_newest_turns_within_budget() -> None:
    text = build_handoff(_transcript(500), budget=5_000)
    assert len(text) < 6_000
    assert "TASK: port the parser" in text
    assert "step 499 " in text and "step 0 " not in text
    assert "earlier messages left out" in text
    assert "y" * 301 not in text  # long tool output is cut
