"""Every answer is drawn exactly once (issue 33): whatever prints above the prompt while an
answer streams — a line queued, Ctrl-C, a prompt from an attached terminal, a permission
question — the block in progress stays the prompt's live tail and reaches the scrollback once,
and no prompt (`›`, the menu's `allow? … ›`) is left behind. Queued lines an interrupt stopped
go back into the input box. The installed `avatar` in tmux, on the native agent, Claude Code
(stream-json) and Gemini CLI (ACP) against the fake model server; the whole scrollback is read.
"""

from __future__ import annotations

import re
import threading

import pytest

from tests.e2e.test_terminal import PROMPT, TURN_DONE, repl
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.served import serving
from tests.support.tmux import Terminal

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: Each agent tested, with the API the fake server answers it on.
AGENTS = {"native": "chat", "claude": "anthropic", "gemini": "gemini"}
WORDS = [f"alpha{i} " for i in range(30)]


def queued(provider: str, word: str) -> str:
    """A line typed during a turn that waits for its end (on native a plain line steers the
    turn instead: a command waits)."""
    return f"/rename {word}" if provider == "native" else f"{word} queued"


def held_answer(hold: threading.Event) -> Reply:
    """An answer whose first block is drawn and whose second streams until `hold` is set."""
    return Reply.text("", chunks=["Opening block of the answer.\n\n", *WORDS]).held(hold)


def agent(request: pytest.FixtureRequest) -> str:
    name = str(request.param)
    if name != "native":
        require_bridges(name)
    return name


@pytest.fixture(params=list(AGENTS))
def provider(request: pytest.FixtureRequest) -> str:
    return agent(request)


def once(history: str) -> None:
    """The held answer is in `history` exactly once, and no empty prompt line is left above
    the last one."""
    flat = " ".join(history.split())
    assert flat.count("Opening block of the answer.") == 1, history
    assert flat.count("alpha3 ") == 1, history
    lines = [line.rstrip() for line in history.splitlines()]
    prompts = [i for i, line in enumerate(lines) if line == "›"]
    # (one: the prompt waiting now)
    assert len(prompts) <= 1 and not any(line.startswith("allow?") for line in lines), history


def test_a_line_queued_while_the_answer_streams_leaves_it_drawn_once(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str
) -> None:
    hold = threading.Event()
    model_server.script(AGENTS[provider], held_answer(hold), Reply.text("Second answer."))
    line = queued(provider, "once")
    with repl(agent_home, "-p", provider, "repl") as term:
        term.type("talk")
        term.wait_for("alpha28", timeout=90)
        term.type(line)
        term.wait_for(rf"queued for after this turn: {line}")
        hold.set()
        ran = "renamed: once" if provider == "native" else r"Second answer\.(?s:.*)" + TURN_DONE
        term.wait_for(ran, timeout=90)
        term.wait_for(PROMPT)
        history = term.history()
    once(history)
    lines = [line.rstrip() for line in history.splitlines()]
    assert lines.count(f"› {line}") == 1  # shown where it runs, once


def test_ctrl_c_leaves_the_answer_once_and_puts_queued_lines_back_in_the_box(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str
) -> None:
    hold = threading.Event()
    model_server.script(AGENTS[provider], held_answer(hold), Reply.text("Sent from the box."))
    first, second = queued(provider, "first"), queued(provider, "second")
    with repl(agent_home, "-p", provider, "repl") as term:
        term.type("talk")
        term.wait_for("alpha28", timeout=90)
        term.type(first)
        term.wait_for(rf"queued for after this turn: {first}")
        term.type(second)
        term.wait_for(rf"queued for after this turn: {second}")
        term.keys("C-c")
        term.wait_for(r"\(2 queued lines back in the box\)", timeout=60)
        screen = term.wait_for(rf"^› {first}\s*\n\s*{second}\s*$", timeout=60)
        assert "dropped" not in screen
        once(term.history())
        term.keys("Enter")  # the box holds them: sent as they are, as one
        if provider == "native":
            term.wait_for(r"renamed: first /rename second")
            return
        term.wait_for(r"Sent from the box\.(?s:.*)" + TURN_DONE, timeout=90)
    said = model_server.requests_for(AGENTS[provider])[-1].conversation_texts()
    assert any(f"{first}\n{second}" in text for text in said), said


def test_a_permission_question_leaves_the_answer_once_and_no_menu_prompt(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str
) -> None:
    write = {
        "native": Reply.tool_call("write", {"path": "tabs.txt", "content": "x\n"}),
        "claude": Reply.tool_call(
            "Write", {"file_path": str(agent_home.workdir / "tabs.txt"), "content": "x\n"}
        ),
        "gemini": Reply.tool_call(
            "write_file", {"file_path": str(agent_home.workdir / "tabs.txt"), "content": "x\n"}
        ),
    }[provider]
    talk = Reply.text("", chunks=["Opening block of the answer.\n\n", *WORDS]) + write
    model_server.script(AGENTS[provider], talk, Reply.text("Tabs it is."))
    with repl(agent_home, "-p", provider, "repl") as term:
        term.type("write it")
        term.wait_for(r"^allow\?", timeout=90)
        term.type("no, use tabs")  # a refusal typed as a line, sent with Enter
        term.wait_for(r"Tabs it is\.(?s:.*)" + TURN_DONE, timeout=90)
        once(term.history())
    assert not (agent_home.workdir / "tabs.txt").exists()


def test_a_prompt_from_an_attached_terminal_leaves_the_answer_once_on_both(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str
) -> None:
    hold = threading.Event()
    model_server.script(AGENTS[provider], held_answer(hold), Reply.text("Answer to attach."))
    env, cwd = avatar_env(agent_home), agent_home.workdir
    with (
        serving(env, cwd),
        Terminal(["avatar", "-p", provider, "repl"], env, cwd) as term,
    ):
        term.wait_for(PROMPT, timeout=60)
        term.type("talk")
        screen = term.wait_for(r"session: (\S+) ", timeout=90)
        sid = re.findall(r"session: (\S+) ", screen)[0]
        term.wait_for("alpha28", timeout=90)
        with Terminal(["avatar", "attach", sid], env, cwd) as att:
            att.wait_for("alpha28", timeout=60)
            att.wait_for(PROMPT)
            att.type("from attach")
            term.wait_for(r"queued for after this turn: \(attach:\d+\) from attach")
            hold.set()
            term.wait_for(r"Answer to attach\.(?s:.*)" + TURN_DONE, timeout=90)
            # Its turn's end line, not the answer's text alone: that shows first in the
            # prompt's live tail, while the blocks printed above it are still on their way
            # (prompt-toolkit writes them out at most every 0.2 s).
            att.wait_for(r"Answer to attach\.(?s:.*)" + TURN_DONE, timeout=90)
            once(att.history())
        once(term.history())
