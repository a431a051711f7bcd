"""Claude Code's own `/compact` in the REPL (issue 23, item 9): it shows what happened, not an
empty turn, and the context use on the status line drops after it."""

from __future__ import annotations

import re
import time

import pytest

from tests.e2e.test_status_numbers import status_line
from tests.e2e.test_terminal import TURN_DONE, body, repl
from tests.support.homes import AgentHome, require_bridges
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def test_claude_compact_shows_no_empty_turn_and_the_context_drops(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges()
    model_server.script(
        "anthropic",
        Reply.text("First answer.").with_usage(90_000, 1_000),
        Reply.text("The conversation so far: a greeting.").with_usage(2_000, 300),
    )
    with repl(agent_home, "-p", "claude", "repl") as term:
        term.type("hello")
        before = status_line(term.wait_for(r"(?s)First answer\..*" + TURN_DONE, timeout=90))
        term.type("/compact")
        said = r"claude compacted the conversation: 91,000 → ([\d,]+) tokens"
        term.wait_for(said + r"(?s:.*)^›\s*$(?s:.*)idle\s*$", timeout=90)
        time.sleep(1)  # (a turn end line would come now)
        screen = term.screen()
    lines = body(screen)
    after_compact = lines[lines.index("› /compact") + 1 :]
    assert after_compact[0].startswith("notice: claude compacted the conversation: 91,000 → ")
    assert not any(line.startswith("─ ") for line in after_compact), lines  # no empty turn
    ctx = [int(re.search(r"ctx (\d+)%", line).group(1)) for line in (before, status_line(screen))]  # type: ignore[union-attr]
    assert ctx[1] < ctx[0], (before, status_line(screen))  # the status line follows it
