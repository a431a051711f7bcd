"""Answers drawn block by block as they stream (issue 23, item 4): the installed `avatar` REPL in
a real terminal (tmux) against the fake model server, its screen read back as a person sees it.

A table is drawn in box drawing, a list's items follow each other without blank lines and keep
their nesting, and the block still streaming shows as a live tail above the prompt before it
is drawn.
"""

from __future__ import annotations

import pytest

from tests.e2e.test_terminal import TURN_DONE, body, repl
from tests.support.homes import AgentHome
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

ANSWER = """Here are the **numbers**:

| name | value |
|------|-------|
| alpha | 1 |
| beta | 22 |

Steps:

1. open the file

2. change it
   - the header
   - the footer
3. save it

Done."""


def test_a_table_and_a_list_are_drawn_as_blocks(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    # Streamed in pieces that cut rows and items in two, as a model's tokens do.
    pieces = [ANSWER[i : i + 7] for i in range(0, len(ANSWER), 7)]
    model_server.chat.append(Reply.text(ANSWER, chunks=pieces))
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("show me")
        lines = [line.rstrip() for line in body(term.wait_for(TURN_DONE))]
    assert "Here are the numbers:" in lines
    top = next(i for i, line in enumerate(lines) if line.startswith("╭"))
    assert lines[top + 1].startswith("│ name") and lines[top + 1].endswith("│")
    assert lines[top + 2].startswith("├")
    assert lines[top + 3].startswith("│ alpha") and lines[top + 4].startswith("│ beta")
    assert lines[top + 5].startswith("╰")
    assert not any("|---" in line or "| alpha |" in line for line in lines)  # no raw pipes
    first = next(i for i, line in enumerate(lines) if line.strip() == "1. open the file")
    assert [line.strip() for line in lines[first : first + 5]] == [
        "1. open the file",
        "2. change it",
        "• the header",
        "• the footer",
        "3. save it",
    ]  # one item a line, no blank line between them
    indent = len(lines[first]) - len(lines[first].lstrip())
    nested = len(lines[first + 2]) - len(lines[first + 2].lstrip())
    assert nested > indent  # the nested list is drawn inside its item
    assert "Done." in lines


def test_the_block_in_progress_is_a_live_tail_until_it_is_drawn(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    words = ["A table ", "follows ", "soon ", "and ", "this ", "paragraph ", "streams ", "slowly."]
    model_server.chat.append(Reply.slow_text(["Intro line.\n\n", *words, "\n\nEnd."], delay=0.4))
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("go")
        screen = term.wait_for(r"^A table follows soon\b.*\n›", timeout=20)
        lines = body(screen)
        tail = next(i for i, line in enumerate(lines) if line.startswith("A table follows"))
        assert lines[tail + 1].startswith("›")  # right above the input line, not drawn yet
        assert "Intro line." in lines[:tail]  # the finished paragraph is drawn above
        lines = body(term.wait_for(TURN_DONE))
        drawn = [line.strip() for line in lines]
        assert "A table follows soon and this paragraph streams slowly." in drawn
        assert drawn.count("A table follows soon and this paragraph streams slowly.") == 1
        assert "End." in drawn
