"""What the page's event stream adds to a session's events (avatar.server.web.stream): a run
of streamed text is followed by the same text rendered as the HTML export renders it (code
highlighted), a file edit carries its diff numbered by the file's own lines, and history an
agent re-sends while reopening a session is left out (the page shows it from the store)."""

from __future__ import annotations

import json
from pathlib import Path

from avatar.server.web.stream import Renderer, frame


def test_a_run_of_text_is_followed_by_its_rendering(tmp_path: Path) -> None:
    renderer = Renderer(tmp_path)
    shown = [
        e
        for event in (
            {"type": "text", "text": "Use **this**:\n\n```python\n"},
            {"type": "usage", "input_tokens": 3},  # inside the run: no rendering yet
            {"type": "text", "text": "print(1)\n```\n"},
            {"type": "turn_finished", "stop_reason": "end_turn"},
        )
        for e in renderer.feed(event)
    ]
    assert [e["type"] for e in shown] == ["text", "usage", "text", "rendered", "turn_finished"]
    html = shown[3]["html"]
    assert "<strong>this</strong>" in html
    assert '<pre class="hl">' in html and 'class="nb">print</span>' in html
    assert renderer.flush() == []  # nothing streamed since


def test_replayed_history_is_left_out(tmp_path: Path) -> None:
    renderer = Renderer(tmp_path)
    shown = [
        e
        for event in (
            {"type": "user_message", "text": "remember the heron", "replay": True},
            {"type": "text", "text": "Noted.", "replay": True},
            {"type": "session", "session_id": "s1", "provider": "gemini", "how": "loaded"},
        )
        for e in renderer.feed(event)
    ]
    assert [e["type"] for e in shown] == ["session"]  # no replayed turn, nor its rendering


def test_an_edit_carries_its_diff_numbered_by_the_file(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("a = 1\nb = 2\nc = 3\nd = 4\n")
    event = {
        "type": "tool_call_started",
        "id": "t1",
        "name": "edit",
        "input": {"path": str(tmp_path / "app.py"), "old_text": "c = 3", "new_text": "c = 33"},
    }
    [shown] = Renderer(tmp_path).feed(event)
    html = shown["diff_html"]
    assert '<div class="path">app.py  +1 -1</div>' in html  # relative to the project
    assert '<span class="del"><i>3</i>- c = 3</span>' in html
    assert '<span class="add"><i>3</i>+ c = 33</span>' in html
    assert "<i>2</i>  b = 2" in html  # context, with the file's numbers


def test_reported_diffs_and_markup_in_them_are_escaped(tmp_path: Path) -> None:
    diff = {"path": "x.html", "old_text": None, "new_text": "<script>x</script>\n", "line": 1}
    event = {"type": "tool_call_updated", "id": "t", "diffs": [diff]}
    [shown] = Renderer(tmp_path).feed(event)
    assert "&lt;script&gt;" in shown["diff_html"] and "<script>" not in shown["diff_html"]
    assert json.loads(frame(shown).removeprefix("data: "))["id"] == "t"
