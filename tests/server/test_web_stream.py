"""What the page's event stream adds to a session's events (avatar.server.web.stream): an
answer's markdown rendered block by block as it streams (tables, code highlighted, what the
model wrote escaped), a file edit's diff numbered by the file's own lines and highlighted
for its language, and history an agent re-sends while reopening a session left out (the
page shows it from the store)."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

from avatar.server.web.stream import Renderer, frame


def test_an_answer_is_rendered_block_by_block_as_it_streams(tmp_path: Path) -> None:
    renderer = Renderer(tmp_path)
    pieces = [
        "Use **this**:\n\n| a | b |\n|---|--:|\n| 1 ",
        "| 2 |\n\n```python\n",
        "print(1)\n```\nand <script>alert(1)</script> then",
    ]
    shown = [e for text in pieces for e in renderer.feed({"type": "text", "text": text})]
    shown += renderer.feed({"type": "usage", "input_tokens": 3})  # inside the run
    shown += renderer.feed({"type": "turn_finished", "stop_reason": "end_turn"})
    kinds = [e["type"] for e in shown]
    streamed = ["text", "blocks", "text", "blocks", "text", "blocks", "usage"]
    assert kinds == [*streamed, "blocks", "turn_finished"]
    first, second, third, last = (e for e in shown if e["type"] == "blocks")
    # The paragraph is drawn once the blank line ends it; the table is still coming.
    assert first["html"] == "<p>Use <strong>this</strong>:</p>\n" and not first["end"]
    assert first["tail"] == "| a | b |\n|---|--:|\n| 1 "
    assert '<div class="table"><table>' in second["html"]
    assert '<td class="align-right">2</td>' in second["html"]  # (a class: no inline style)
    assert second["tail"] == ""
    assert '<pre class="hl"><code><span class="nb">print</span>' in third["html"]
    assert third["tail"] == "and <script>alert(1)</script> then"  # (the page shows it as text)
    # The end of the run: the rest, its markup escaped.
    assert last["end"] and last["tail"] == ""
    assert last["html"] == "<p>and &lt;script&gt;alert(1)&lt;/script&gt; then</p>\n"
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
    assert '<div class="path">app.py <small>+1 -1</small></div>' in html  # relative to the project
    # Each line: the file's number, the sign, the code highlighted as Python.
    assert '<span class="del"><i>3</i><b>-</b> <span class="n">c</span>' in html
    assert '<span class="add"><i>3</i><b>+</b> <span class="n">c</span>' in html
    assert '<span class="mi">33</span></span>' in html
    assert '<span class="ctx"><i>2</i><b> </b> <span class="n">b</span>' in html  # context


def test_reported_diffs_and_markup_in_them_are_escaped(tmp_path: Path) -> None:
    diff = {"path": "x.html", "old_text": None, "new_text": "<script>x</script>\n", "line": 1}
    event = {"type": "tool_call_updated", "id": "t", "diffs": [diff]}
    [shown] = Renderer(tmp_path).feed(event)
    html = shown["diff_html"]
    assert "<script>" not in html  # highlighted as HTML, its tags escaped:
    assert "<script>x</script>" in unescape(re.sub(r"<[^>]+>", "", html))
    assert json.loads(frame(shown).removeprefix("data: "))["id"] == "t"
