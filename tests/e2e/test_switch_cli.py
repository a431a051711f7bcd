"""Switching provider through the installed `avatar`: `/provider` on the REPL screen (there
and back), `repl --from ID` for four pairs, and the lineage in `session info` / `list`."""

from __future__ import annotations

import json
import re

import pexpect
import pytest

from tests.e2e.test_repl import TURN_END, spawn
from tests.support.drive import run_avatar, talk
from tests.support.homes import AgentHome, require_bridges
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

API = {"native": "chat", "claude": "anthropic", "codex": "responses", "gemini": "gemini"}
BINARY = {"claude": "claude", "codex": "codex-acp", "gemini": "gemini"}


def main_requests(server: FakeModelServer, provider: str) -> list[str]:
    return [r.all_text() for r in server.requests_for(API[provider]) if r.is_main]


@pytest.mark.parametrize(("a", "b"), [("native", "claude"), ("codex", "native")])
def test_provider_there_and_back_on_the_repl_screen(
    agent_home: AgentHome, model_server: FakeModelServer, a: str, b: str
) -> None:
    require_bridges(*(BINARY[p] for p in (a, b) if p in BINARY))
    model_server.script(API[a], "Alpha one.", "Alpha two.")
    model_server.script(API[b], "Beta one.")
    model_server.script(API[a], "Alpha three.")
    child = spawn(agent_home, "-p", a, "repl")
    child.sendline("remember the word MARLIN")
    child.expect(rf"session: (\S+) \({a}, new\)", timeout=60)
    a_id = child.match.group(1)
    child.expect("Alpha one.", timeout=60)
    child.expect(TURN_END)
    child.sendline("and the number 42")
    child.expect("Alpha two.", timeout=60)
    child.expect(TURN_END)

    child.sendline(f"/provider {b}")
    child.expect(rf"session: (\S+) \({b}, new\)", timeout=60)
    child.sendline("what did I ask?")
    child.expect("Beta one.", timeout=60)
    child.expect(TURN_END)
    on_b = main_requests(model_server, b)[0]
    assert "remember the word MARLIN" in on_b and "and the number 42" in on_b
    assert "## Goal\nremember the word MARLIN" in on_b

    child.sendline(f"/provider {a}")
    # Reopened: "resumed" (native, Claude Code) or "loaded" (ACP agents replay it).
    child.expect(rf"session: {re.escape(a_id)} \({a}, (?:resumed|loaded)\)", timeout=60)
    child.sendline("anything new?")
    child.expect("Alpha three.", timeout=60)
    child.expect(TURN_END)
    on_a = main_requests(model_server, a)[-1]
    assert "Alpha one." in on_a and "what did I ask?" in on_a and "Beta one." in on_a
    child.sendline("/quit")
    child.expect(pexpect.EOF)


def _two_turns(home: AgentHome, provider: str) -> str:
    return talk(
        home, provider, ("GOAL: rename the module to core", "and keep the old name as alias")
    )


@pytest.mark.parametrize(
    ("a", "b"),
    [("native", "codex"), ("codex", "claude"), ("claude", "gemini"), ("gemini", "native")],
)
def test_repl_from_a_session_of_another_provider(
    agent_home: AgentHome, model_server: FakeModelServer, a: str, b: str
) -> None:
    require_bridges(*(BINARY[p] for p in (a, b) if p in BINARY))
    model_server.script(API[b], "Carrying on.")
    source = _two_turns(agent_home, a)

    out = run_avatar(agent_home, "-p", b, "repl", "--from", source[:12], stdin="go on\n")
    assert out.returncode == 0, out.stderr
    assert "Carrying on." in out.stdout
    on_b = main_requests(model_server, b)[0]
    assert "GOAL: rename the module to core" in on_b
    assert "and keep the old name as alias" in on_b
    assert "## Goal\nGOAL: rename the module to core" in on_b

    listed = json.loads(run_avatar(agent_home, "session", "list", "--json").stdout)
    child = next(s for s in listed if s["provider"] == b)
    parent = next(s for s in listed if s["id"] == source)
    assert child["parent"] == f"{a}/{source}" and parent["children"] == [f"{b}/{child['id']}"]
    # The user's words or the agent's own title, never the handed-over text.
    assert "handed over" not in child["title"] and "GOAL" not in child["title"]

    info = run_avatar(agent_home, "session", "info", child["id"]).stdout
    assert re.search(rf"^parent\s+{a}/{source}$", info, re.M)
    tree = run_avatar(agent_home, "session", "list", "--tree").stdout.splitlines()
    rows = [ln for ln in tree if source in ln or child["id"] in ln]
    assert source in rows[0] and "└─ " not in rows[0]
    assert child["id"] in rows[1] and "└─ " in rows[1]


def test_repl_from_with_import_opens_the_target_on_real_messages(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("claude")
    model_server.script("anthropic", "Noted.", "Noted too.")
    model_server.script("chat", "Native carries on.")
    source = _two_turns(agent_home, "claude")

    out = run_avatar(
        agent_home, "-p", "native", "repl", "--from", source, "--import", stdin="go on\n"
    )
    assert out.returncode == 0, out.stderr
    assert "Native carries on." in out.stdout
    assert re.search(r"session: \S+ \(native, resumed\)", out.stdout + out.stderr)
    convo = [(m.role, m.text) for m in model_server.requests_for("chat")[-1].messages()]
    assert convo[1:] == [
        ("user", "GOAL: rename the module to core"),
        ("assistant", "Noted."),
        ("user", "and keep the old name as alias"),
        ("assistant", "Noted too."),
        ("user", "go on"),
    ]

    bad = run_avatar(agent_home, "repl", "--import")
    assert bad.returncode == 2 and bad.stderr == "avatar: --import needs --from SESSION\n"


def test_native_forks_show_in_the_tree(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.script("chat", "Root answer.")
    source = talk(agent_home, "native", ["the root question"])
    fork = run_avatar(agent_home, "session", "fork", source)
    assert fork.returncode == 0, fork.stderr
    fork_id = fork.stdout.split()[-1]
    listed = json.loads(run_avatar(agent_home, "session", "list", "--json").stdout)
    child = next(s for s in listed if s["id"] == fork_id)
    assert child["parent"] == f"native/{source}"
    tree = run_avatar(agent_home, "session", "list", "--tree").stdout.splitlines()
    rows = [ln for ln in tree if source in ln or fork_id in ln]
    assert source in rows[0] and fork_id in rows[1] and "└─ " in rows[1]
