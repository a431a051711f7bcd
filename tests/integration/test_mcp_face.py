"""`avatar mcp` called by the real agents (docs/design.md §12): the library as MCP tools.

Each agent runs under `avatar chat` against the fake model server, so it runs inside avatar's
walls, and so does the `avatar mcp` it starts: what it answers proves the walls let it read
the library (agents read as the user) and that it needs to write nothing outside them. The
fake model's first reply calls an avatar tool; the next request the agent sends the model
carries the tool's result, which is what the assertions read.

- Claude Code (`--mcp-config`, through avatar's config `mcp_servers`): `search_sessions`
  finds a phrase said only in a codex session, made first with the real codex-acp.
- codex (codex-acp; its own `[mcp_servers.avatar]` in `$CODEX_HOME/config.toml`, written by
  `avatar mcp --install codex`): `handoff` of a Claude Code session gets the structured
  summary within the budget asked for.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.drive import Avatar
from tests.support.homes import AgentHome, avatar_env, bridge_bin, require_bridges
from tests.support.model_server import FakeModelServer, RecordedRequest, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

PHRASE = "copper lantern protocol"
FINAL = "Found it."
AVATAR = str(Path(sys.executable).parent / "avatar")


@pytest.fixture
def home(tmp_path: Path, model_server: FakeModelServer) -> AgentHome:
    # codex offers tools only to a model name it knows (the kit's default gets none).
    return AgentHome(tmp_path / "agent", model_server, codex_model="gpt-5.4")


def tool_results(request: RecordedRequest) -> list[str]:
    """The tool results an Anthropic request sends back to the model (Claude Code)."""
    body: Any = request.body or {}
    out = []
    for message in body.get("messages") or []:
        for block in message.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                content = block.get("content")
                if isinstance(content, list):
                    content = "".join(
                        str(p.get("text", "")) for p in content if isinstance(p, dict)
                    )
                out.append(str(content))
    return out


def function_outputs(request: RecordedRequest) -> list[str]:
    """The outputs of the tool calls a Responses request sends back (codex)."""
    body: Any = request.body or {}
    out = []
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            output = item.get("output")
            if isinstance(output, list):
                output = "".join(str(p.get("text", "")) for p in output if isinstance(p, dict))
            out.append(str(output))
    return out


def test_claude_code_searches_a_codex_session(
    home: AgentHome, model_server: FakeModelServer
) -> None:
    """Claude Code, walled, calls `search_sessions` and gets the codex session, which the
    search index (made before it, outside the walls) did not hold yet."""
    require_bridges("claude", "codex-acp")
    env = avatar_env(home)
    run = Avatar(home, env, timeout=200)
    run("session", "search", "anything")  # (the search index exists, before the session)
    index = Path(env["AVATAR_HOME"]) / "cache" / "search.sqlite"
    indexed = index.read_bytes()
    model_server.script("responses", f"Noted: the {PHRASE} it is.")
    codex_sid, _, _ = run.session(run("-p", "codex", "chat", f"Remember the {PHRASE}."))

    # The user's config (trusted): Claude Code gets `avatar mcp` through --mcp-config.
    config = {"mcp_servers": {"avatar": {"command": AVATAR, "args": ["mcp"]}}}
    Path(env["AVATAR_CONFIG"]).write_text(json.dumps(config))
    query = f'"{PHRASE}"'
    model_server.script(
        "anthropic", Reply.tool_call("mcp__avatar__search_sessions", {"query": query}), FINAL
    )
    proc = run("-p", "claude", "chat", "--permission", "allow", "What did codex note?")

    assert proc.stdout.rstrip("\n").splitlines()[-1] == FINAL, proc.stdout
    main = [r for r in model_server.requests_for("anthropic") if r.is_main]
    # The first request after the call carries its one result (a later one, e.g. Claude
    # Code's prompt suggestion, may carry it again).
    results = next((found for r in main if (found := tool_results(r))), [])
    assert len(results) == 1, [r.all_text()[-400:] for r in main]
    hits = json.loads(results[0])["sessions"]
    codex = [h for h in hits if h["id"] == codex_sid]
    assert codex and codex[0]["provider"] == "codex", hits
    assert PHRASE in codex[0]["snippet"], codex
    # Inside Claude Code's walls `avatar mcp` read the stores and the index, and wrote neither.
    assert index.read_bytes() == indexed


def test_codex_gets_a_handoff_within_its_budget(
    home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("claude", "codex-acp")
    env = avatar_env(home)
    run = Avatar(home, env, timeout=200)
    # A Claude Code session longer than the budget: its goal, and three long turns.
    goal = "Port the billing module to the new ledger API."
    long = "The ledger keeps every entry twice. " * 120
    model_server.script("anthropic", long, long, long)
    sid, _, _ = run.session(run("-p", "claude", "chat", goal))
    for n in (2, 3):
        run("-p", "claude", "chat", "--resume", sid, f"Step {n}: carry on.")

    installed = run("mcp", "--install", "codex", "--yes")
    assert "[mcp_servers.avatar]" in installed.stderr
    budget = 1_000
    call = Reply.tool_call(
        "handoff", {"session": sid, "budget_tokens": budget}, namespace="mcp__avatar"
    )
    model_server.script("responses", call, FINAL)
    proc = run("-p", "codex", "chat", "--permission", "allow", "Take over the billing work.")

    assert proc.stdout.rstrip("\n").splitlines()[-1] == FINAL, proc.stdout
    requests = model_server.requests_for("responses")
    outputs = next((found for r in requests if (found := function_outputs(r))), [])
    assert len(outputs) == 1, [r.all_text()[-400:] for r in requests]
    summary = outputs[0]
    assert f"claude session {sid}" in summary, summary[:400]
    assert f"## Goal\n{goal}" in summary, summary[:600]
    assert "earlier messages left out" in summary  # (the budget made it cut)
    assert len(summary) <= budget * 4, len(summary)


# agent → (its CLI, the command that lists its MCP servers, what says it has avatar's).
LISTING = {
    "claude": ("claude", ["mcp", "get", "avatar"], ["Scope: User config", "Connected"]),
    "codex": ("codex", ["mcp", "list", "--json"], ['"name": "avatar"', f'"command": "{AVATAR}"']),
    "gemini": ("gemini", ["mcp", "list"], ["avatar:", f"{AVATAR} mcp (stdio) - Connected"]),
}


@pytest.mark.parametrize("agent", list(LISTING))
def test_the_agent_lists_the_installed_server(home: AgentHome, agent: str) -> None:
    """After `avatar mcp --install AGENT`, the agent's own CLI lists the server from its user
    config (Claude Code and Gemini start it and say it connected)."""
    binary, args, shown = LISTING[agent]
    require_bridges(binary)
    env = avatar_env(home)
    Avatar(home, env)("mcp", "--install", agent, "--yes")
    listed = subprocess.run(
        [bridge_bin(binary), *args],
        env=env,
        cwd=home.workdir,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    said = listed.stdout + listed.stderr  # (Gemini lists on either, by version)
    for words in shown:
        assert words in said, said
