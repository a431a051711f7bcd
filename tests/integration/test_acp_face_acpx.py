"""`avatar acp` driven by a real ACP client nobody here wrote: acpx (pinned in bridges/), with
avatar as its custom agent (`acpx --agent "avatar -p codex acp"`), avatar running the real
codex-acp (and Claude Code after a switch) against the fake model server (docs/design.md §12).

acpx keeps a session per project in its own home (`~/.acpx`, the test's HOME) and a process
that holds the agent between its commands for `--ttl` seconds: `sessions new`, `prompt`,
`set`, `cancel` and `sessions close` each reach the same `avatar acp` while it lives.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.homes import (
    AgentHome,
    avatar_env,
    bridge_bin,
    persistent_tmpdir,
    require_bridges,
)
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

AVATAR = str(Path(sys.executable).parent / "avatar")


class Acpx:
    """`acpx` run in the home's project with avatar as its agent (`-p codex` unless told)."""

    def __init__(
        self,
        home: AgentHome,
        env: dict[str, str],
        *,
        policy: str = "--approve-all",
        provider: str = "codex",
    ):
        self.home, self.env, self.policy, self.provider = home, env, policy, provider

    def argv(self, *args: str) -> list[str]:
        agent = f"{AVATAR} -p {self.provider} acp"
        return [bridge_bin("acpx"), "--agent", agent, "--ttl", "60", "--format", "json",
                self.policy, *args]  # fmt: skip

    def __call__(self, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            self.argv(*args),
            env=self.env,
            cwd=self.home.workdir,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == code, f"acpx {args}:\n{proc.stdout[-3000:]}\n{proc.stderr}"
        return proc

    def close(self) -> None:
        """End acpx's session (and the avatar acp it holds)."""
        subprocess.run(
            self.argv("sessions", "close"),
            env=self.env,
            cwd=self.home.workdir,
            capture_output=True,
            timeout=120,
        )


def messages(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """The JSON-RPC messages acpx printed (`--format json`)."""
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def answer_text(proc: subprocess.CompletedProcess[str]) -> str:
    """The agent's answer as acpx received it."""
    chunks = [
        m["params"]["update"]
        for m in messages(proc)
        if m.get("method") == "session/update"
        and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
    ]
    return "".join(c["content"].get("text", "") for c in chunks)


def prompt_result(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The answer to acpx's `session/prompt`."""
    asked = {m["id"] for m in messages(proc) if m.get("method") == "session/prompt"}
    [result] = [m["result"] for m in messages(proc) if m.get("id") in asked and "result" in m]
    return dict(result)


def sessions(env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
    out = subprocess.run(
        [AVATAR, "session", "list", "--json"], env=env, cwd=cwd, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    listed: list[dict[str, Any]] = json.loads(out.stdout)
    return listed


@pytest.fixture
def home(tmp_path: Path, model_server: FakeModelServer) -> AgentHome:
    require_bridges("acpx", "codex-acp", "claude")
    return AgentHome(tmp_path / "agent", model_server)


def test_a_one_shot_answers_is_listed_and_resumed(
    home: AgentHome, model_server: FakeModelServer
) -> None:
    env = avatar_env(home)
    acpx = Acpx(home, env)
    model_server.script("responses", "Noted: the violet anchor.")
    first = acpx("exec", "Remember the violet anchor.")
    assert answer_text(first) == "Noted: the violet anchor."
    [listed] = [s for s in sessions(env, home.workdir) if s["provider"] == "codex"]
    sid = listed["id"]
    new = [m for m in messages(first) if m.get("result", {}).get("sessionId")]
    assert new[0]["result"]["sessionId"] == sid  # (the id acpx knows is codex's own)

    # acpx resumes it: avatar loads it (codex's own session/load), and codex gets the history.
    try:
        acpx("sessions", "new", "--resume-session", sid)
        model_server.script("responses", "It was the violet anchor.")
        again = acpx("prompt", "What did I ask you to remember?")
        assert answer_text(again) == "It was the violet anchor."
    finally:
        acpx.close()
    last = model_server.requests_for("responses")[-1]
    assert "Remember the violet anchor." in last.all_text()
    assert [s["id"] for s in sessions(env, home.workdir)] == [sid]


def test_a_provider_switch_hands_the_conversation_to_claude(
    home: AgentHome, model_server: FakeModelServer
) -> None:
    env = avatar_env(home)
    acpx = Acpx(home, env)
    try:
        acpx("sessions", "new")
        model_server.script("responses", "Codex noted the teal kettle.")
        acpx("prompt", "Remember the teal kettle.")
        switched = acpx("set", "provider", "claude")
        [said] = messages(switched)  # (acpx's summary of the change, with avatar's options)
        assert said["action"] == "config_set", said
        provider = [o for o in said["configOptions"] if o["id"] == "provider"]
        assert provider[0]["currentValue"] == "claude"
        model_server.script("anthropic", "Claude has it.")
        after = acpx("prompt", "What should you remember?")
    finally:
        acpx.close()
    assert answer_text(after) == "Claude has it."
    [first] = [r for r in model_server.requests_for("anthropic") if r.is_main][:1]
    assert "Remember the teal kettle." in first.all_text()
    assert "Codex noted the teal kettle." in first.all_text()
    providers = {s["provider"]: s for s in sessions(env, home.workdir)}
    assert providers["claude"]["parent"] == f"codex/{providers['codex']['id']}"


def test_a_cancel_from_acpx_stops_the_turn(home: AgentHome, model_server: FakeModelServer) -> None:
    env = avatar_env(home)
    acpx = Acpx(home, env)
    release = threading.Event()
    try:
        acpx("sessions", "new")
        model_server.script("responses", Reply.text("Counting slowly: one two three").held(release))
        running = subprocess.Popen(
            acpx.argv("prompt", "Count."),
            env=env,
            cwd=home.workdir,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert model_server.wait_for_request(api="responses", timeout=200) is not None
        acpx("cancel")
        out, err = running.communicate(timeout=200)
    finally:
        release.set()
        acpx.close()
    done = subprocess.CompletedProcess(running.args, running.returncode, out, err)
    assert prompt_result(done)["stopReason"] == "cancelled", out[-2000:]


@pytest.fixture
def tool_home(tmp_path: Path, model_server: FakeModelServer) -> Iterator[AgentHome]:
    """codex with its tools (a gpt-5 name, CODEX_HOME off /tmp), and its process outside the
    walls: every edit it wants then comes to avatar as a permission question (inside them,
    under `allow`, codex would not ask: tests/integration/test_acp_permission_real.py)."""
    require_bridges("acpx", "codex-acp")
    with persistent_tmpdir() as codex_home:
        made = AgentHome(
            tmp_path / "agent", model_server, codex_home=codex_home, codex_model="gpt-5.4"
        )
        (made.root / "avatar-config.yaml").write_text(
            json.dumps({"scope": {"sandbox": "commands"}})
        )
        yield made


BEFORE = "the old line\n"


def patch_call(target: Path) -> Reply:
    patch = (
        f"*** Begin Patch\n*** Update File: {target}\n@@\n-{BEFORE}+the new line\n*** End Patch\n"
    )
    return Reply.tool_call("exec_command", {"cmd": f"apply_patch <<'EOF'\n{patch}EOF\n"})


@pytest.mark.parametrize("policy", ["--deny-all", "--approve-all"])
def test_a_permission_question_reaches_acpx_and_its_answer_is_obeyed(
    tool_home: AgentHome, model_server: FakeModelServer, policy: str
) -> None:
    target = tool_home.workdir / "notes.txt"
    target.write_text(BEFORE)
    model_server.script("responses", patch_call(target), Reply.text("done"))
    acpx = Acpx(tool_home, avatar_env(tool_home), policy=policy)
    proc = acpx("exec", "Change the line.", code=0 if policy == "--approve-all" else 5)
    asked = [m for m in messages(proc) if m.get("method") == "session/request_permission"]
    assert len(asked) == 1, proc.stdout[-3000:]
    assert asked[0]["params"]["toolCall"]["kind"] == "edit"
    if policy == "--approve-all":
        assert target.read_text() == "the new line\n"
    else:
        assert target.read_text() == BEFORE


def test_the_clients_mcp_servers_reach_the_agent(
    home: AgentHome, model_server: FakeModelServer
) -> None:
    """acpx's MCP servers (`--mcp-config`) reach codex-acp in its `session/new` (read at a tap
    between avatar and codex-acp, tests/support/acp_tap.py), beside the config's."""
    sent = home.workdir / "sent.jsonl"
    tap = Path(__file__).parents[1] / "support" / "acp_tap.py"
    entry = {"command": [sys.executable, str(tap), str(sent), "codex-acp"]}
    (home.root / "avatar-config.yaml").write_text(json.dumps({"providers": {"codex": entry}}))
    servers = home.root / "mcp.json"
    env = [{"name": "AVATAR_PROBE", "value": "1"}]
    library = {"name": "library", "command": AVATAR, "args": ["mcp"], "env": env}
    servers.write_text(json.dumps({"mcpServers": [library]}))
    model_server.script("responses", "Fine.")
    Acpx(home, avatar_env(home))("--mcp-config", str(servers), "exec", "Hello.")
    news = [
        json.loads(line)["params"]
        for line in sent.read_text().splitlines()
        if json.loads(line).get("method") == "session/new"
    ]
    [given] = [s for s in news[0]["mcpServers"] if s["name"] == "library"]
    assert given["command"] == AVATAR and given["args"] == ["mcp"]
    assert {"name": "AVATAR_PROBE", "value": "1"} in given["env"]


def test_the_agents_avatar_acp_runs_stay_inside_the_walls(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """codex, run by `avatar acp` under the default walls with everything allowed (the
    config's `permission: allow`, acpx's --approve-all), runs the shell line that tries
    everything (tests/integration/test_agent_walls.py): its one write inside the project
    lands, and nothing outside or protected changes. (Under `ask`, codex runs its commands
    in its own bubblewrap sandbox, which this machine lacks.)"""
    from tests.integration.test_agent_walls import _attack, _marker, _project, _protected
    from tests.support import git_attack

    require_bridges("acpx", "codex-acp")
    with persistent_tmpdir() as codex_home:
        home = AgentHome(
            tmp_path / "agent",
            model_server,
            codex_home=codex_home / ".codex",
            codex_sandbox="danger-full-access",
            codex_model="gpt-5.4",
        )
        outside = tmp_path / "outside"
        before = _project(home, outside)
        (home.root / "avatar-config.yaml").write_text(json.dumps({"permission": "allow"}))
        run = Reply.tool_call("exec_command", {"cmd": _attack(outside)})
        model_server.script("responses", run, Reply.text("done"))
        proc = Acpx(home, avatar_env(home))("exec", "Go.")
    assert answer_text(proc).endswith("done"), proc.stdout[-4000:]
    assert (home.workdir / "inside.txt").read_text() == "made\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]
    assert _protected(home.workdir) == before
    assert not git_attack.users_git_status_runs_it(home.workdir, _marker(outside))


def test_thinking_and_usage_reach_acpx(tmp_path: Path, model_server: FakeModelServer) -> None:
    """codex thinks and answers: acpx gets the thought chunks, the context's use and the
    answer, as codex-acp sent them to avatar."""
    require_bridges("acpx", "codex-acp")
    model_server.script(
        "responses", Reply.thinking("Weighing the ledger first.") + Reply.text("Planned.")
    )
    home = AgentHome(tmp_path / "agent", model_server)
    proc = Acpx(home, avatar_env(home))("exec", "Plan the port.")
    updates = [m["params"]["update"] for m in messages(proc) if m.get("method") == "session/update"]
    kinds = [u["sessionUpdate"] for u in updates]
    thought = "".join(
        u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_thought_chunk"
    )
    assert thought.strip() == "Weighing the ledger first.", kinds
    used = [u for u in updates if u["sessionUpdate"] == "usage_update"]
    assert used and all(u["used"] > 0 and u["size"] > u["used"] for u in used), used
    assert answer_text(proc).strip() == "Planned."


def test_a_plan_reaches_acpx(tmp_path: Path, model_server: FakeModelServer) -> None:
    """Claude Code (through claude-agent-acp) writes its todo list: acpx gets it as a plan
    (claude-agent-acp names the entry in progress by its `activeForm`)."""
    require_bridges("acpx", "claude-agent-acp")
    todos = [
        {"content": "Read the ledger", "status": "completed", "activeForm": "Reading"},
        {"content": "Port the billing module", "status": "in_progress", "activeForm": "Porting"},
    ]
    model_server.script(
        "anthropic", Reply.tool_call("TodoWrite", {"todos": todos}), Reply.text("Planned.")
    )
    home = AgentHome(tmp_path / "agent", model_server)
    proc = Acpx(home, avatar_env(home), provider="claude-acp")("exec", "Plan the port.")
    print(
        "TOOLS", [r.tool_names() for r in model_server.requests_for("anthropic") if r.is_main][:1]
    )
    plans = [
        m["params"]["update"]
        for m in messages(proc)
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "plan"
    ]
    assert plans, proc.stdout[-3000:]
    assert [(e["content"], e["status"]) for e in plans[-1]["entries"]] == [
        ("Read the ledger", "completed"),
        ("Porting", "in_progress"),
    ]
    assert answer_text(proc).strip().endswith("Planned.")


def test_an_untrusted_project_runs_nothing_it_names(
    home: AgentHome, model_server: FakeModelServer
) -> None:
    """An editor opening a session in a project whose `.avatar.yaml` names an agent command
    and an MCP server (tests/integration/test_trust.py's hostile project) runs neither until
    `avatar trust`, as `avatar chat` there; the notice that says so is the session's first
    message in the editor."""
    from tests.integration.test_trust import Project

    project = Project(home)
    env = avatar_env(home)
    model_server.script("responses", "Fine.", "Fine again.")
    untrusted = Acpx(home, env)("exec", "Hello.")
    said = answer_text(untrusted)  # (the notice is the session's first message)
    notice = (
        f"notice: {project.config} is not trusted: ignored providers.codex.executable, "
        "mcp_servers.stamp; run `avatar trust` to apply them (or --trust for this run)\n"
    )
    assert said == notice + "Fine.", said
    assert not project.marker.exists() and not project.mcp_ran

    trusted = subprocess.run(
        [AVATAR, "trust"], env=env, cwd=home.workdir, capture_output=True, text=True
    )
    assert trusted.returncode == 0, trusted.stderr
    again = Acpx(home, env)("exec", "Hello again.")
    assert answer_text(again) == "Fine again."
    assert project.marker.exists() and project.mcp_ran
