"""Escape sequences in a model's answer do nothing to the terminal (docs/design.md §10): in the REPL
and in `chat`, an answer that changes the window title, clears the screen and hides a link
behind OSC 8 leaves the earlier lines and the title as they were, and the escapes read as
text on the screen."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_terminal import AVATAR, PROMPT, TURN_DONE, body, repl
from tests.support.drive import SESSION_LINE
from tests.support.drive import avatar as run_avatar
from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer, Reply
from tests.support.tmux import Terminal

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

HOSTILE = (
    "start \x1b]0;OWNED\x07 then \x1b[2J\x1b[H cleared? "
    "\x1b]8;;https://evil.example/\x1b\\click here\x1b]8;;\x1b\\ end"
)
SHOWN = "^[]0;OWNED"  # (the BEL after it is a ^G, or dropped: either way it does nothing)


def test_the_repl_shows_escapes_as_text_and_keeps_the_screen(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(Reply.text("EARLIER answer line."), Reply.text(HOSTILE))
    with repl(agent_home, "-p", "native", "repl") as term:
        title = term.title()
        term.type("first")
        term.wait_for(TURN_DONE)
        term.type("second")
        lines = body(term.wait_for(r"end\s*$(?s:.*)" + PROMPT))
        assert "EARLIER answer line." in lines  # not cleared away
        [shown] = [line for line in lines if line.startswith("start ")]
        assert SHOWN in shown and "^[[2J^[[H" in shown
        assert "^[]8;;https://evil.example/^[\\click here" in shown
        assert term.title() == title != "OWNED"


def test_chat_at_a_terminal_shows_escapes_as_text(
    agent_home: AgentHome, model_server: FakeModelServer, tmp_path: Path
) -> None:
    model_server.chat.append(Reply.text(HOSTILE))
    script = f"echo EARLIER; {AVATAR} -p native chat hi; echo exit=$?; sleep 30"
    with Terminal(["sh", "-c", script], avatar_env(agent_home), agent_home.workdir) as term:
        title = term.title()
        screen = term.wait_for(r"^exit=\d")
        assert screen.splitlines()[0] == "EARLIER"
        assert "exit=0" in screen
        [shown] = [line for line in screen.splitlines() if line.startswith("start ")]
        assert shown == (
            "start ^[]0;OWNED^G then ^[[2J^[[H cleared? "
            "^[]8;;https://evil.example/^[\\click here^[]8;;^[\\ end"
        )
        assert term.title() == title != "OWNED"


def test_session_list_and_show_at_a_terminal_show_escapes_as_text(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    """A title and a transcript read back from a session file; piped, they stay data."""
    model_server.chat.append(Reply.text(HOSTILE))
    env = avatar_env(agent_home)
    made = run_avatar(env, agent_home.workdir, "-p", "native", "chat", "title \x1b[2J here")
    sid = SESSION_LINE.search(made.stderr).group(1)  # type: ignore[union-attr]
    piped = run_avatar(env, agent_home.workdir, "session", "show", sid)
    assert HOSTILE in piped.stdout and "title \x1b[2J here" in piped.stdout
    script = f"echo EARLIER; {AVATAR} session list; {AVATAR} session show {sid}; sleep 30"
    with Terminal(["sh", "-c", script], env, agent_home.workdir, height=60) as term:
        title = term.title()
        screen = term.wait_for(r"end\s*$")
        lines = screen.splitlines()
        assert lines[0] == "EARLIER"
        assert any(line.startswith("native") and "title ^[[2J here" in line for line in lines)
        assert any(SHOWN in line for line in lines)
        assert term.title() == title != "OWNED"
