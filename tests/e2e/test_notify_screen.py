"""The terminal rings when a turn ends or a permission question waits unseen (issue 33;
docs/design.md §11): the REPL turns on the terminal's focus reports, and while the terminal
has said it lost focus (`ESC [ O`), a turn's end and a permission question write an OSC 9
notification; once it says it is in view again (`ESC [ I`), nothing rings. The reports are
never typed into the box, and reporting is turned off when the REPL leaves (else the shell
gets them).

The installed `avatar` in tmux, its raw output read with `pipe-pane`, on the native agent,
Claude Code (stream-json) and Gemini CLI (ACP) against the fake model server.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.e2e.test_approval_screen import API, MENU, edits
from tests.e2e.test_terminal import AVATAR, PROMPT, TURN_DONE
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.tmux import Terminal

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

FOCUS_OUT, FOCUS_IN = b"\x1b[O", b"\x1b[I"
RANG = b"\x1b]9;avatar: "


@pytest.fixture(params=list(API))
def provider(request: pytest.FixtureRequest) -> str:
    name = str(request.param)
    if name != "native":
        require_bridges(name)
    return name


def written(sink: Path, what: bytes, timeout: float = 30.0) -> bytes:
    """The output so far, once it holds `what`."""
    deadline = time.monotonic() + timeout
    while what not in (out := sink.read_bytes()):
        assert time.monotonic() < deadline, f"{what!r} not written: {out[-2000:]!r}"
        time.sleep(0.1)
    return out


def test_a_turn_end_and_a_question_ring_only_while_the_terminal_is_unseen(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str, tmp_path: Path
) -> None:
    # Every turn counts as long (the default is 10 s).
    (agent_home.root / "avatar-config.yaml").write_text(json.dumps({"notify_after": 0.01}))
    model_server.script(
        API[provider],
        Reply.text("First answer."),
        edits(provider, agent_home.workdir)[1],  # a write: asked
        Reply.text("Not written."),
        Reply.text("Third answer."),
    )
    sink = tmp_path / "output"
    command = [AVATAR, "-p", provider, "repl"]
    with Terminal(command, avatar_env(agent_home), agent_home.workdir, width=100) as term:
        term.pipe_output(sink)
        term.wait_for(PROMPT, timeout=60)
        written(sink, b"\x1b[?1004h")  # focus reporting on
        term.send_bytes(FOCUS_OUT)
        term.type("one")
        term.wait_for(r"First answer\.(?s:.*)" + TURN_DONE, timeout=180)
        out = written(sink, RANG + b"the turn ended")
        term.type("two")
        term.wait_for(MENU, timeout=180)
        out = written(sink, RANG + b"permission asked: ")
        term.keys("n")
        term.wait_for(r"Not written\.(?s:.*)" + TURN_DONE, timeout=180)
        rung = sink.read_bytes().count(RANG)
        term.send_bytes(FOCUS_IN)
        term.type("three")
        screen = term.wait_for(r"Third answer\.(?s:.*)" + TURN_DONE, timeout=180)
        assert sink.read_bytes().count(RANG) == rung  # in view: nothing rang
        assert "[O" not in screen and "[I" not in screen  # reports are not typed
        term.keys("C-d")
        out = written(sink, b"\x1b[?1004l")  # reporting off on leaving
    assert out.count(RANG + b"the turn ended") == 2
