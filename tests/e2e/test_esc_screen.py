"""Esc interrupts at once (issue 33): it was also the first key of Esc-Enter (a new line), so the
REPL waited for a second key — 1.5 s and more, ~15 chunks of the answer — before it took a
lone Esc. Now, during a turn, a lone Esc interrupts as soon as it is read: the rest of the
answer, which the model sends a second after the key, never shows. Alt-Enter still makes a
new line during a turn (its two keys come together), and Esc then Enter by hand does when
idle. The installed `avatar` in tmux on the native agent, Claude Code (stream-json) and Gemini
CLI (ACP); how fast, against Ctrl-C in the same run: `benchmarks/esc.py`.
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.e2e.test_once_screen import AGENTS, agent, held_answer
from tests.e2e.test_terminal import TURN_END, repl
from tests.support.homes import AgentHome
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: How long after Esc the model sends the rest of its answer: far more than Esc needs now
#: (tens of milliseconds), less than it took before (1.5 s: half a second for an escape
#: sequence, then a second for the key after Esc).
LATER = 1.0


@pytest.fixture(params=list(AGENTS))
def provider(request: pytest.FixtureRequest) -> str:
    return agent(request)


def test_esc_stops_the_answer_before_the_model_sends_more_and_keeps_the_new_line_keys(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str
) -> None:
    hold = threading.Event()
    model_server.script(AGENTS[provider], held_answer(hold), Reply.text("Two lines read."))
    with repl(agent_home, "-p", provider, "repl") as term:
        term.type("talk")
        term.wait_for("alpha28", timeout=90)
        term.type("kept", enter=False)
        term.keys("M-Enter")  # Alt-Enter: Esc and Enter come together, a new line
        term.type("in the box", enter=False)
        term.wait_for(r"^› kept\s*\n\s*in the box\s*$")
        assert "interrupted" not in term.screen()  # the turn runs on
        term.keys("Escape")
        time.sleep(LATER)
        hold.set()  # the rest of the answer, a second after the key
        term.wait_for(r"\(interrupted\)", timeout=60)
        term.wait_for(TURN_END, timeout=60)
        term.wait_for(r"^› kept\s*\n\s*in the box\s*$")  # what was typed stays
        assert "alpha29" not in term.history()
        term.keys("C-c")  # (the box emptied)
        term.wait_gone(r"in the box\s*$")
        term.type("first", enter=False)
        term.keys("Escape")  # idle, by hand: Esc, then Enter a moment later, a new line
        time.sleep(0.3)
        term.keys("Enter")
        term.type("second")
        term.wait_for(r"Two lines read\.", timeout=90)
        shown = term.history()
        assert "alpha29" not in shown
    said = model_server.requests_for(AGENTS[provider])[-1].conversation_texts()
    # (the screen says which it was: an Esc taken as an interrupt, or a line queued)
    assert any("first\nsecond" in text for text in said), (said, shown[-1500:])


def test_the_keys_are_idle_once_the_turn_end_shows_though_the_files_are_still_recorded(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    """Recording the project's files after a turn (for /rewind) takes as long as the files
    changed need; meanwhile the turn-end line shows, and keys are taken as when idle: Esc does
    not interrupt a finished turn, Esc then Enter is a new line, and Enter sends at once."""
    hold = threading.Event()
    model_server.script("chat", held_answer(hold), Reply.text("Two lines read."))
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("talk")
        term.wait_for("alpha28", timeout=90)
        for d in range(50):  # the user's build writes 5,000 files meanwhile: ~1 s to record
            (agent_home.workdir / "build" / f"d{d}").mkdir(parents=True)
            for i in range(100):
                (agent_home.workdir / "build" / f"d{d}" / f"f{i}.txt").write_text(f"{d} {i}\n")
        hold.set()
        term.wait_for(TURN_END, timeout=60)
        term.type("first", enter=False)
        term.keys("Escape")
        time.sleep(0.3)
        term.keys("Enter")
        term.type("second")
        term.wait_for(r"Two lines read\.", timeout=90)
        shown = term.history()
    assert "(interrupted)" not in shown and "queued" not in shown, shown
    said = model_server.requests_for("chat")[-1].conversation_texts()
    assert any("first\nsecond" in text for text in said), said
