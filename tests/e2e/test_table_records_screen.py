"""A table wider than the terminal is drawn as records (issue 33): at 60 columns a 14-column
table showed `…` in every cell, nothing readable; now each row is a record under a rule, one
`heading: value` a line, every value whole. A table that fits is still box-drawn.

The installed `avatar` in tmux at 60 columns, on the native agent, Claude Code (stream-json)
and Gemini CLI (ACP) against the fake model server.
"""

from __future__ import annotations

import pytest

from tests.e2e.test_terminal import AVATAR, TURN_DONE, body
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.tmux import Terminal

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

API = {"native": "chat", "claude": "anthropic", "gemini": "gemini"}
COLUMNS = [f"field{i}" for i in range(14)]
WIDE = (
    "Wide:\n\n| "
    + " | ".join(COLUMNS)
    + " |\n|"
    + "---|" * len(COLUMNS)
    + "\n"
    + "".join(
        "| " + " | ".join(f"{row}-value{i}" for i in range(len(COLUMNS))) + " |\n"
        for row in ("first", "second")
    )
    + "\nNarrow:\n\n| name | value |\n|---|---|\n| alpha | 1 |\n\nDone."
)


@pytest.fixture(params=list(API))
def provider(request: pytest.FixtureRequest) -> str:
    name = str(request.param)
    if name != "native":
        require_bridges(name)
    return name


def test_a_table_wider_than_the_terminal_is_drawn_as_records(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str
) -> None:
    model_server.script(API[provider], Reply.text(WIDE))
    command = [AVATAR, "-p", provider, "repl"]
    env = avatar_env(agent_home)
    with Terminal(command, env, agent_home.workdir, width=60, height=80) as term:
        term.wait_for(r"^›")
        term.type("show the table")
        lines = [line.rstrip() for line in body(term.wait_for(TURN_DONE, timeout=180))]
    wide = lines[lines.index("Wide:") + 1 : lines.index("Narrow:")]
    assert not any("…" in line for line in wide), wide
    records = [line for line in wide if line.strip()]
    assert records[0].startswith("─") and records[15].startswith("─"), wide
    assert records[1:15] == [f"{c}: first-value{i}" for i, c in enumerate(COLUMNS)], wide
    assert records[16:30] == [f"{c}: second-value{i}" for i, c in enumerate(COLUMNS)], wide
    narrow = lines[lines.index("Narrow:") + 1 : lines.index("Done.")]
    assert [line for line in narrow if line.strip()][1].startswith("│ name"), narrow
