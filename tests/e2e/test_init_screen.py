"""`/init` in the REPL (issue 33: what a Claude Code, Codex or Gemini user misses): the agent
studies the project and writes the instructions file it reads, said in one line before it
runs. On native (no init of its own) the prompt naming AGENTS.md reaches the model and the
file the agent writes appears; on Claude Code the agent's own /init runs (its own prompt, about
CLAUDE.md, reaches the model); on codex-acp, an ACP agent without one, avatar's prompt does,
and on Gemini CLI too (it lists an init, which over ACP only answers with its prompt)."""

from __future__ import annotations

import pytest

from avatar.providers.registry import shipped
from tests.e2e.test_terminal import TURN_DONE, body, repl
from tests.support.homes import AgentHome, require_bridges
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

ASKED = "write the instructions file {file} at the project's root"


def _said(lines: list[str], line: str) -> int:
    """Where the one line `/init` says is on the screen, after `› /init` (asserted once)."""
    assert lines.count(line) == 1, lines
    assert lines.index("› /init") < lines.index(line), lines
    return lines.index(line)


def test_init_on_native_asks_for_agents_md_and_the_file_appears(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    written = "# toy\n\nRun `make test` before each commit.\n"
    model_server.chat.append(
        Reply.tool_call("write", {"path": "AGENTS.md", "content": written}),
        Reply.text("AGENTS.md is written."),
    )
    with repl(agent_home, "-p", "native", "repl", "--permission", "allow") as term:
        term.type("/init")
        lines = body(term.wait_for(r"AGENTS\.md is written\.(?s:.*)" + TURN_DONE))
    said = _said(lines, "(/init: asking native to study the project and write or update AGENTS.md)")
    wrote = next(n for n, line in enumerate(lines) if line.startswith("✓ write AGENTS.md"))
    assert wrote > said, lines
    asked = model_server.requests_for("chat")[0].last_user_text()
    assert ASKED.format(file="AGENTS.md") in asked
    assert (agent_home.workdir / "AGENTS.md").read_text() == written


def _init_on(
    home: AgentHome, server: FakeModelServer, provider: str, api: str, said: str
) -> list[str]:
    """`/init` typed in `provider`'s REPL after a first turn (the agent has listed its own
    commands by then), the model answering on `api`: the line said is on the screen; what the
    model was asked since the first turn (the last user message of each request)."""
    require_bridges(shipped()[provider].command[0])
    server.script(api, Reply.text("Hello there."), Reply.text("The file is written."))
    with repl(home, "-p", provider, "repl") as term:
        term.type("hello")
        term.wait_for(r"Hello there\.(?s:.*)" + TURN_DONE, timeout=120)
        term.type("/init")
        lines = body(term.wait_for(r"The file is written\.(?s:.*)" + TURN_DONE, timeout=120))
    _said(lines, said)
    texts = [r.last_user_text() for r in server.requests_for(api) if r.is_main]
    return texts[texts.index(next(t for t in texts if "hello" in t)) + 1 :]


@pytest.mark.parametrize("provider", ["claude", "claude-acp"])
def test_init_on_claude_runs_claude_s_own_init(
    provider: str, agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    said = f"(/init: {provider}'s own /init, which studies the project and writes CLAUDE.md)"
    asked = _init_on(agent_home, model_server, provider, "anthropic", said)
    # Claude Code's own /init, expanded into its prompt; not avatar's
    if provider == "claude":
        assert any("<command-name>/init</command-name>" in t for t in asked), asked
    assert any("create a CLAUDE.md file" in t for t in asked), asked
    assert not any(ASKED.format(file="CLAUDE.md") in t for t in asked), asked


@pytest.mark.parametrize(
    ("provider", "api", "file"),
    [("codex", "responses", "AGENTS.md"), ("gemini", "gemini", "GEMINI.md")],
)
def test_init_on_an_agent_without_a_working_own_asks_for_its_file(
    provider: str, api: str, file: str, agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    said = f"(/init: asking {provider} to study the project and write or update {file})"
    asked = _init_on(agent_home, model_server, provider, api, said)
    assert any(ASKED.format(file=file) in t for t in asked), asked
