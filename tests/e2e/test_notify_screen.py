"""Notifications, as a person who looked away meets them (issue 33): the installed `avatar` REPL in
tmux, told by focus reports (what a terminal sends when its window loses or gains the focus)
whether anybody looks. A turn that ends, or a permission question that waits, while the terminal
is not focused rings it — the bell (in tmux, its window alert) or a desktop notification by
OSC 9 — and a focused terminal is left quiet; focus reports never interrupt a turn. On the native
agent, Claude Code (stream-json) and claude-agent-acp (ACP)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable

import pytest

from tests.e2e.test_terminal import AVATAR, PROMPT, TURN_DONE, repl
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.tmux import Terminal

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

MENU = r"\[y\] yes\s+\[a\] always"
OSC = re.compile(rb"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")  # (a title's OSC ends with a BEL too)


def _bells(written: bytes) -> int:
    """The bells rung in `written`: BELs that end no OSC sequence."""
    return OSC.sub(b"", written).count(b"\x07")


def _notifications(written: bytes) -> list[str]:
    """The desktop notifications (OSC 9) in `written`."""
    return [m.decode() for m in re.findall(rb"\x1b\]9;([^\x07\x1b]*)\x07", written)]


def _once(term: Terminal, rung: Callable[[bytes], object], timeout: float = 10.0) -> bytes:
    """What was written, once `rung` finds what it looks for in it (a ring is written beside
    the screen's drawing, which may show first)."""
    deadline = time.monotonic() + timeout
    while not rung(term.recorded()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return term.recorded()


def _after_the_turn(term: Terminal) -> bytes:
    """What was written by the time a command typed after the turn has answered (a ring at the
    turn's end is written before the next line is read)."""
    term.type("/cost")
    term.wait_for(r"today, from avatar's records:(?s:.*)" + PROMPT)
    return term.recorded()


def _config(home: AgentHome, **settings: str) -> None:
    (home.root / "avatar-config.yaml").write_text(json.dumps(settings))


def test_a_turn_that_ends_unseen_rings_the_bell_and_a_seen_one_does_not(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    words = [f"word{i} " for i in range(12)]
    model_server.chat.append(Reply.slow_text(words, delay=0.2), Reply.text("Seen."))
    with repl(agent_home, "-p", "native", "repl") as term:  # (in tmux: auto is the bell)
        term.record()
        term.type("talk slowly")
        term.wait_for("word2")
        term.focus(False)  # the user looks away mid-turn: the turn goes on
        screen = term.wait_for(r"word11(?s:.*)" + TURN_DONE)
        assert "interrupted" not in screen and "[O" not in screen, screen
        assert _bells(_once(term, _bells)) == 1
        term.focus(True)
        seen = len(term.recorded())
        term.type("again")
        screen = term.wait_for(r"^Seen\.(?s:.*)" + TURN_DONE)
        assert "[I" not in screen, screen
        assert _bells(_after_the_turn(term)[seen:]) == 0


@pytest.mark.parametrize("provider", ["claude", "claude-acp"])
def test_a_permission_waiting_unseen_sends_a_notification(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str
) -> None:
    require_bridges("claude" if provider == "claude" else "claude-agent-acp")
    _config(agent_home, notify="osc9")
    target = agent_home.workdir / "made.txt"
    model_server.script(
        "anthropic",
        Reply.tool_call("Bash", {"command": f"touch {target}", "description": "make a file"}),
        Reply.text("Made it."),
    )
    with repl(agent_home, "-p", provider, "repl") as term:
        term.record()
        term.focus(False)
        term.type("make a file")
        term.wait_for(MENU + r"(?s:.*)^allow\? .*›", timeout=90)
        written = _once(term, _notifications)
        assert _notifications(written) == [f"{provider} asks for permission"]
        term.focus(True)  # back: the answer, and the turn's end, need no ring
        term.type("y", enter=False)
        term.wait_for(r"^Made it\.(?s:.*)" + TURN_DONE, timeout=90)
        written = _after_the_turn(term)
        assert _notifications(written) == [f"{provider} asks for permission"]
        assert _bells(written) == 0
    assert target.exists()


@pytest.mark.parametrize("setting", ["auto", "off"])
def test_focus_reports_are_asked_for_unless_notify_is_off(
    agent_home: AgentHome, setting: str
) -> None:
    _config(agent_home, notify=setting)
    term = Terminal([AVATAR, "-p", "native", "repl"], avatar_env(agent_home), agent_home.workdir)
    with term:
        term.record()  # (before avatar is up: it takes far longer to start than tmux to pipe)
        term.wait_for(PROMPT)
        asked = b"\x1b[?1004h" in term.recorded()
    assert asked == (setting != "off")
