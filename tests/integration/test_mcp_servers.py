"""Config `mcp_servers` reaches every agent that accepts MCP servers (docs/design.md §4).

A project `.avatar.yaml` names one stdio MCP server, the tiny `tests/support/mcp_server.py` (one
tool, `stamp`); avatar runs with `--trust`, since a project file's MCP servers start only once
it is trusted (tests/integration/test_trust.py). For each provider the real agent CLI runs under
`avatar chat` against the fake model server, whose first reply calls the MCP tool by the name
that agent shows the model, and whose second reply is text. Proof that the server reached the
agent and really ran: the tool is offered in the first model request, the server wrote the
stamped text to its log (the path comes through the config's `env`, so that is proven to arrive
too), and a later model request carries the server's answer. The same again after `--continue`
(the reopened session gets the server too), and an http server's url and headers reach the
agent.

How each agent names an MCP tool for the model (seen in the requests it sends):

- Claude Code (`claude`, stream-json, via `--mcp-config`) and claude-agent-acp (`claude-acp`,
  ACP `mcp_servers`): `mcp__<server>__<tool>`. Claude Code defers MCP tools: they are listed by
  name in the system prompt for its ToolSearch tool, not in `tools`, but a direct call works.
- codex-acp (`codex`): a Responses `"type": "namespace"` tool `mcp__<server>` holding
  `<tool>`; the model's `function_call` carries `namespace` and the bare tool name.
- Gemini CLI (`gemini`): a function declaration `mcp_<server>_<tool>`.

MCP tools need permission (Claude asks through `can_use_tool` / ACP `request_permission`,
Gemini through ACP): `--permission allow` lets avatar answer yes.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import mcp_server
from tests.support.drive import avatar, backdate_gemini
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, RecordedRequest, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SERVER = "stamp"
TEXT = "hello from the model"
AGAIN = "and once more"
FINAL = "The text is stamped."
SESSION_LINE = re.compile(r"^session: (\S+) \([\w-]+, (\w+)\)$")

# provider → (agent CLI, model API, how the model calls `stamp`: (name, Responses namespace)).
PROVIDERS: dict[str, tuple[str, str, tuple[str, str | None]]] = {
    "claude": ("claude", "anthropic", ("mcp__stamp__stamp", None)),
    "claude-acp": ("claude-agent-acp", "anthropic", ("mcp__stamp__stamp", None)),
    "codex": ("codex-acp", "responses", ("stamp", "mcp__stamp")),
    "gemini": ("gemini", "gemini", ("mcp_stamp_stamp", None)),
}


@pytest.fixture
def home(tmp_path: Path, model_server: FakeModelServer) -> AgentHome:
    # codex sends no tools at all for the kit's default model name; a gpt-5 name gets them.
    return AgentHome(tmp_path / "agent", model_server, codex_model="gpt-5.4")


def write_project_config(home: AgentHome, log: Path) -> None:
    """`<project>/.avatar.yaml` with the stamp server; its log path travels in `env`."""
    command, *args = mcp_server.command()
    config = {
        "mcp_servers": {SERVER: {"command": command, "args": args, "env": {"STAMP_LOG": str(log)}}}
    }
    (home.workdir / ".avatar.yaml").write_text(json.dumps(config))


def offered_tools(request: RecordedRequest) -> set[str]:
    """Every tool name in a model request, namespaced ones as `<namespace>__<name>`."""
    body: Any = request.body or {}
    names: set[str] = set()
    for tool in body.get("tools") or []:
        if tool.get("type") == "namespace":
            names |= {f"{tool['name']}__{t['name']}" for t in tool.get("tools") or []}
        elif "functionDeclarations" in tool:
            names |= {f["name"] for f in tool["functionDeclarations"]}
        elif "name" in tool:
            names.add(tool["name"])
    return names


def exposed(request: RecordedRequest, provider: str, name: str, namespace: str | None) -> bool:
    """Whether the first model request offers the MCP tool under the name the model calls."""
    full = f"{namespace}__{name}" if namespace else name
    if full in offered_tools(request):
        return True
    # Claude Code defers MCP tools: named in the system prompt, loaded through ToolSearch.
    return (
        provider.startswith("claude")
        and "ToolSearch" in offered_tools(request)
        and (f"\n{full}\n" in json.dumps(request.body).replace("\\n", "\n"))
    )


def chat(home: AgentHome, provider: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`avatar --trust -p PROVIDER chat --permission allow ARGS…` in the project; must
    succeed."""
    cmd = ("--trust", "-p", provider, "chat", "--permission", "allow", *args)
    proc = avatar(avatar_env(home), home.workdir, *cmd, timeout=150)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    return proc


def session_of(proc: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    """(session id, how it was opened) from the `session:` line on stderr."""
    found = [m for line in proc.stderr.splitlines() if (m := SESSION_LINE.match(line))]
    assert len(found) == 1, proc.stderr
    return found[0].group(1), found[0].group(2)


def assert_stamped(
    proc: subprocess.CompletedProcess[str],
    requests: list[RecordedRequest],
    provider: str,
    text: str,
) -> None:
    """In one `chat` run the agent offered the tool and showed the model the server's answer."""
    _, _, (name, namespace) = PROVIDERS[provider]
    # codex may print a model-metadata warning first; the answer is the last line.
    assert proc.stdout.rstrip("\n").splitlines()[-1] == FINAL, proc.stdout
    main = [r for r in requests if r.is_main]
    assert main, proc.stderr
    assert exposed(main[0], provider, name, namespace), sorted(offered_tools(main[0]))
    # Found by content: Claude Code may send a prompt-suggestion request after the turn.
    answered = [r for r in main[1:] if mcp_server.tool_answer(text) in r.all_text()]
    assert answered, [r.all_text()[-300:] for r in main]


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_config_mcp_server_reaches_the_agent(
    home: AgentHome, model_server: FakeModelServer, provider: str
) -> None:
    """A new session gets the server, and so does the same session reopened (`--continue`:
    ACP session/load or resume, Claude Code restarted with `--resume`)."""
    binary, api, (name, namespace) = PROVIDERS[provider]
    require_bridges(binary)
    # In the project: the server runs inside the agent's sandbox, which writes nowhere else.
    log = home.workdir / "stamp.log"
    write_project_config(home, log)
    # Scripted run by run: claude-agent-acp asks the model for a prompt suggestion after each
    # turn, which must get the default reply, not the next run's tool call.
    model_server.script(api, Reply.tool_call(name, {"text": TEXT}, namespace=namespace), FINAL)
    first = chat(home, provider, "stamp my text")
    sid, how = session_of(first)
    assert how == "new"
    assert_stamped(first, model_server.requests_for(api), provider, TEXT)
    # The MCP server really ran the tool, with the model's argument.
    assert log.is_file(), f"the MCP tool never ran:\n{first.stderr}"
    assert log.read_text().splitlines() == [TEXT]

    backdate_gemini(home, provider, sid)
    seen = len(model_server.requests_for(api))
    model_server.script(api, Reply.tool_call(name, {"text": AGAIN}, namespace=namespace), FINAL)
    again = chat(home, provider, "--continue", "once more")
    assert session_of(again) == (sid, "continued")
    assert_stamped(again, model_server.requests_for(api)[seen:], provider, AGAIN)
    assert log.read_text().splitlines() == [TEXT, AGAIN]


# One agent per wiring: `--mcp-config` (headers through Claude Code's environment) and an ACP
# `HttpMcpServer` (the other ACP agents take the same object; all four were seen connecting).
@pytest.mark.parametrize("provider", ["claude", "codex"])
def test_config_http_mcp_server_reaches_the_agent(
    home: AgentHome, model_server: FakeModelServer, provider: str
) -> None:
    """An http server's url and headers arrive too: the agent connects to the url (here the
    fake model server, which records the request and answers 404) with the configured header.
    For Claude Code the header travels through its environment, not its command line."""
    binary, api, _ = PROVIDERS[provider]
    require_bridges(binary)
    secret = "Bearer mcp-header-4c1d"
    remote = {"url": f"{model_server.url}/mcp", "headers": {"Authorization": secret}}
    config = {"mcp_servers": {"remote": remote}}
    (home.workdir / ".avatar.yaml").write_text(json.dumps(config))
    model_server.script(api, FINAL)

    proc = chat(home, provider, "hello")

    assert proc.stdout.rstrip("\n").endswith(FINAL), proc.stdout
    calls = [r for r in model_server.requests if r.path == "/mcp"]
    assert calls, proc.stderr
    assert {r.headers.get("authorization") for r in calls} == {secret}
