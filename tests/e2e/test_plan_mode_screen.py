"""Plan mode, typed into the installed `avatar` in tmux (issue 23, item 7): Shift-Tab cycles
ask / accept edits / plan where the agent has a plan mode (the native agent, Claude Code,
claude-agent-acp), the status line shows it, a write the model asks for in plan mode is not
made, and back in ask mode the same write is asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_terminal import TURN_DONE, repl
from tests.support.homes import AgentHome, require_bridges
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

MENU = r"\[y\] yes\s+\[a\] always"
API = {"native": "chat", "claude": "anthropic", "claude-acp": "anthropic", "gemini": "gemini"}
BINARY = {"claude": "claude", "claude-acp": "claude-agent-acp", "gemini": "gemini"}


def _write(provider: str, target: Path) -> Reply:
    """The model asks to write `target` with the provider's own write tool."""
    if provider == "native":
        return Reply.tool_call("write", {"path": target.name, "content": "x\n"})
    if provider == "gemini":
        return Reply.tool_call("write_file", {"file_path": str(target), "content": "x\n"})
    return Reply.tool_call("Write", {"file_path": str(target), "content": "x\n"})


@pytest.mark.parametrize("provider", ["native", "claude-acp", "claude", "gemini"])
def test_plan_mode_writes_nothing_and_ask_asks_again(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str
) -> None:
    if provider in BINARY:
        require_bridges(BINARY[provider])
    api, target = API[provider], agent_home.workdir / "plan.txt"
    model_server.script(api, _write(provider, target), Reply.text("Planned: write plan.txt."))
    model_server.script(api, _write(provider, target), Reply.text("Written."))
    with repl(agent_home, "-p", provider, "repl") as term:
        term.keys("BTab")
        term.wait_for("permission mode: accept edits")
        term.keys("BTab")
        term.wait_for("permission mode: plan")
        term.wait_for(r"^\S+ · .* · plan mode · idle$")  # on the status line
        term.type("write plan.txt")
        screen = term.wait_for(r"Planned: write plan\.txt\.(?s:.*)" + TURN_DONE)
        assert "[y] yes" not in screen  # nothing was asked: nothing was done
        assert not target.exists()
        planned = [r for r in model_server.requests_for(api) if r.is_main]
        # The agent's own plan mode was on: Claude Code's reminder; native's read-only tools.
        if provider == "native":
            assert "write" not in planned[0].tool_names()
            assert "Plan mode is on" in planned[0].system_text()
        elif provider == "gemini":
            assert "# Active Approval Mode: Plan" in planned[0].system_text()
            assert "[MODE_UPDATE]" not in screen  # Gemini's word for it is not its answer
        else:
            assert "Plan mode is active" in planned[0].all_text()
        term.keys("BTab")
        term.wait_for("permission mode: ask")
        term.type("now write it")
        term.wait_for(MENU)
        term.keys("y")
        term.wait_for(r"Written\.(?s:.*)" + TURN_DONE)
    assert target.read_text() == "x\n"


def test_shift_tab_skips_plan_where_the_agent_has_none(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    model_server.script("responses", Reply.text("Opened."))
    with repl(agent_home, "-p", "codex", "repl") as term:
        term.type("hello")
        term.wait_for(r"Opened\.(?s:.*)" + TURN_DONE)
        term.keys("BTab")
        term.wait_for("permission mode: accept edits")
        term.keys("BTab")
        screen = term.wait_for(r"permission mode: ask;")
        assert "permission mode: plan" not in screen


def test_claude_acp_leaving_plan_mode_by_its_plan_is_asked_and_followed(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("claude-agent-acp")
    model_server.script(
        "anthropic",
        Reply.tool_call("ExitPlanMode", {"plan": "1. write plan.txt"}),
        Reply.text("Leaving plan mode."),
    )
    with repl(agent_home, "-p", "claude-acp", "repl") as term:
        term.keys("BTab")
        term.wait_for("permission mode: accept edits")
        term.keys("BTab")
        term.wait_for(r"^\S+ · .* · plan mode · idle$")
        term.type("plan it")
        term.wait_for(MENU)  # the user decides whether the plan is carried out
        term.keys("y")
        screen = term.wait_for(r"Leaving plan mode\.(?s:.*)" + TURN_DONE)
        assert "permission mode: ask)" in screen
        assert "plan mode · idle" not in screen.splitlines()[-1]
