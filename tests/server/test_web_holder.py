"""Which sessions a live session opened that nobody prompted (avatar.server.web.holder): what
the web page removes when such a session closes, read from the live session's events."""

from __future__ import annotations

from avatar.server.web.holder import unprompted


def session(sid: str, how: str, provider: str = "native") -> dict[str, str]:
    return {"type": "session", "provider": provider, "session_id": sid, "how": how}


def test_a_new_session_nobody_prompted() -> None:
    assert unprompted([session("s1", "new")]) == [("native", "s1")]
    assert unprompted([session("s1", "new"), {"type": "turn_started", "prompt": "hi"}]) == []


def test_a_resumed_session_is_never_the_pages_to_remove() -> None:
    assert unprompted([session("s1", "resumed")]) == []
    assert unprompted([session("s1", "loaded")]) == []


def test_a_switch_opens_another_each_judged_on_its_own() -> None:
    prompted_then_switched = [
        session("s1", "new"),
        {"type": "turn_started", "prompt": "hi"},
        session("c1", "new", "codex"),
        {"type": "switched", "provider": "codex", "session_id": "c1"},
    ]
    assert unprompted(prompted_then_switched) == [("codex", "c1")]
    switched_then_prompted = [
        session("s1", "new"),
        session("c1", "new", "codex"),
        {"type": "turn_started", "prompt": "hi"},
    ]
    assert unprompted(switched_then_prompted) == [("native", "s1")]
