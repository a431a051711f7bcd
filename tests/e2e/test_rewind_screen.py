"""`/rewind` and Esc Esc as a person uses them (issue 33): the installed `avatar` REPL in a real
terminal (tmux), the native agent and Claude Code against the fake model server. The turns are
listed with what each changed, one is picked, both files come back byte for byte, the session
the conversation continues in is said, and the next request no longer holds the rewound turns.
`/diff --rewind N` shows what the rewind would undo before it is done."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.test_terminal import TURN_DONE, body, repl
from tests.support.homes import AgentHome, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.tmux import Terminal

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

A_BEFORE = b"def add(a, b):\n    return a + b\n"
B_BEFORE = b"notes\n"
SHELL = "printf 'SHELLTEXT\\n' > b.txt && echo new > c.txt"


def _project(home: AgentHome) -> Path:
    work = home.workdir
    (work / "a.txt").write_bytes(A_BEFORE)
    (work / "b.txt").write_bytes(B_BEFORE)
    return work


def _three_turns(term: Terminal) -> None:
    answers = {"remember APPLE-7": "Noted APPLE-7.", "make add subtract": "Subtracted.",
               "rewrite the notes": "Rewritten."}  # fmt: skip
    for prompt, answer in answers.items():
        term.type(prompt)
        term.wait_for(rf"^{re.escape(answer)}(?s:.*){TURN_DONE}", timeout=120)


def _pick(term: Terminal, turn: str) -> str:
    """Answer the picker: turn `turn`, both; the screen once the rewound session is open."""
    # (the list is written above the question's prompt, which prompt-toolkit may draw first)
    screen = term.wait_for(r"^turns of this session(?s:.*)rewind to before turn ›")
    lines = [line.strip() for line in body(screen)]
    assert any(line.startswith("2") and "make add subtract" in line and "a.txt +1 -1" in line
               for line in lines), screen  # fmt: skip
    assert any(line.startswith("3") and "b.txt +1 -1, c.txt (new)" in line for line in lines)
    term.type(turn)
    term.wait_for(r"restore \[b\]oth, \[f\]iles only or \[c\]onversation only\? ›")
    term.type("b")
    return term.wait_for(r"notice: rewind: .*kept(?s:.*)^›", timeout=60)


def _rewound(work: Path, server: FakeModelServer, api: str) -> None:
    assert (work / "a.txt").read_bytes() == A_BEFORE
    assert (work / "b.txt").read_bytes() == B_BEFORE
    assert not (work / "c.txt").exists()
    last = [r for r in server.requests_for(api) if r.is_main][-1].all_text()  # type: ignore[arg-type]
    assert "BANANA-9" in last and "APPLE-7" in last
    assert "make add subtract" not in last and "SHELLTEXT" not in last


def test_esc_esc_rewinds_a_native_session(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    work = _project(agent_home)
    model_server.chat.append(
        Reply.text("Noted APPLE-7."),
        Reply.tool_call("edit", {"path": "a.txt", "old_text": "a + b", "new_text": "a - b"}),
        Reply.text("Subtracted."),
        Reply.tool_call("bash", {"command": SHELL}),
        Reply.text("Rewritten."),
        Reply.text("I remember APPLE-7."),
    )
    with repl(agent_home, "-p", "native", "repl", "--permission", "allow") as term:
        _three_turns(term)
        term.type("/diff --rewind 2")
        screen = term.wait_for(r"would undo \(3 files\):(?s:.*)c\.txt(?s:.*)^›")
        lines = [line.strip() for line in body(screen)]
        assert "2 -    return a + b" in lines and "2 +    return a - b" in lines, screen
        assert (work / "b.txt").read_bytes() != B_BEFORE  # (only shown: nothing undone yet)

        term.keys("Escape", "Escape")
        screen = _pick(term, "2")
        assert "notice: rewind: 2 files restored, 1 removed" in screen
        assert "(native, forked)" in screen
        assert "native's own fork of session" in screen
        term.type("what do you remember? BANANA-9")
        term.wait_for("I remember APPLE-7.(?s:.*)" + TURN_DONE)
    _rewound(work, model_server, "chat")


def test_slash_rewind_picks_a_turn_on_claude(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("claude")
    work = _project(agent_home)
    a = str(work / "a.txt")
    model_server.script(
        "anthropic",
        Reply.text("Noted APPLE-7."),
        Reply.tool_call("Read", {"file_path": a}),
        Reply.tool_call("Edit", {"file_path": a, "old_string": "a + b", "new_string": "a - b"}),
        Reply.text("Subtracted."),
        Reply.tool_call("Bash", {"command": SHELL, "description": "rewrite"}),
        Reply.text("Rewritten."),
        Reply.text("I remember APPLE-7."),
    )
    with repl(agent_home, "-p", "claude", "repl", "--permission", "allow") as term:
        _three_turns(term)
        term.type("/rewind")
        screen = _pick(term, "2")
        assert "notice: rewind: 2 files restored, 1 removed" in screen
        assert "(claude, forked)" in screen and "claude's own fork of session" in screen
        term.type("what do you remember? BANANA-9")
        term.wait_for("I remember APPLE-7.(?s:.*)" + TURN_DONE, timeout=120)
    _rewound(work, model_server, "anthropic")
