"""Every agent process in the same walls (issue 20, acceptance 2): the same shell tricks through
Claude Code's own Bash tool, codex's own command tool, Gemini's shell tool and an ACP agent's
terminal (avatar's `terminal/create`, here asked for by the fake ACP agent) leave the outside
and the protected paths untouched — with the real agents against the fake model server, under
`--permission allow` (the agents' own permission questions are all answered yes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import git_attack
from tests.support.acp_agent import command as fake_agent_command
from tests.support.drive import avatar
from tests.support.homes import REPO_ROOT, AgentHome, avatar_env, persistent_tmpdir
from tests.support.model_server import FakeModelServer, Reply
from tests.support.served import serving, socket_of

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

# One line that tries everything: a write outside, a protected file, a hook, a secret outside.
SECRET = "OUTSIDE-SECRET-5d1e"


def _attack(outside: Path) -> str:
    return (
        f"echo pwned > {outside}/pwned; "
        "echo '[core] fsmonitor = x' >> .git/config; "
        "echo x > .git/hooks/post-checkout; "
        f"{git_attack.command(_marker(outside))}; "
        f"cat {outside}/secret; cat .env; "
        "echo made > inside.txt"
    )


def _marker(outside: Path) -> Path:
    """What the planted fsmonitor command would create (`tests/support/git_attack.py`)."""
    return outside.parent / "fsmonitor-ran"


# The tool each agent's model calls to run a shell command, and its arguments.
TOOLS = {
    "claude": ("anthropic", "Bash", lambda cmd: {"command": cmd, "description": "run it"}),
    "claude-acp": ("anthropic", "Bash", lambda cmd: {"command": cmd, "description": "run it"}),
    "codex": ("responses", "exec_command", lambda cmd: {"cmd": cmd}),
    "gemini": ("gemini", "run_shell_command", lambda cmd: {"command": cmd}),
}


def _project(home: AgentHome, outside: Path) -> dict[str, bytes]:
    work = home.workdir
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / ".env").write_text("TOKEN=DOTENV-SECRET-88aa\n")
    outside.mkdir()
    (outside / "secret").write_text(SECRET + "\n")
    return _protected(work)


def _protected(work: Path) -> dict[str, bytes]:
    return {
        "config": (work / ".git" / "config").read_bytes(),
        "hooks": "\n".join(sorted(os.listdir(work / ".git" / "hooks"))).encode(),
        "env": (work / ".env").read_bytes(),
    }


@pytest.mark.parametrize("provider", sorted(TOOLS))
def test_an_agents_own_shell_tool_stays_inside(
    provider: str, model_server: FakeModelServer, tmp_path: Path
) -> None:
    with persistent_tmpdir() as codex_home:
        home = AgentHome(
            tmp_path / "agent",
            model_server,
            codex_home=codex_home / ".codex",
            codex_sandbox="danger-full-access",
        )
        outside = tmp_path / "outside"
        before = _project(home, outside)
        api, tool, args = TOOLS[provider]
        model_server.script(api, Reply.tool_call(tool, args(_attack(outside))), Reply.text("done"))
        env = avatar_env(home)
        run = avatar(env, home.workdir, "-p", provider, "chat", "--permission", "allow", "go",
                     timeout=180)  # fmt: skip
        assert run.returncode == 0, run.stderr
        # The command ran (its one legitimate write landed) and nothing else changed.
        assert (home.workdir / "inside.txt").read_text() == "made\n"
        assert sorted(os.listdir(outside)) == ["secret"]
        assert _protected(home.workdir) == before
        assert not git_attack.users_git_status_runs_it(home.workdir, _marker(outside))
        # An agent reads as the user does (its walls are for writes), but never a denied path.
        last = [r for r in model_server.requests_for(api) if r.is_main][-1]
        assert "DOTENV-SECRET" not in json.dumps(last.json())


def test_an_acp_agents_terminal_stays_inside(
    agent_home: AgentHome, avatar_env: dict[str, str], tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    before = _project(agent_home, outside)
    state = tmp_path / "fake-state"
    argv = fake_agent_command({"state_dir": str(state), "terminal": _attack(outside)})
    fake = {
        "transport": "acp",
        "command": argv,
        "env": {"PYTHONPATH": str(REPO_ROOT)},
        "state_dirs": [f"{state}/"],
    }
    Path(avatar_env["AVATAR_CONFIG"]).write_text(json.dumps({"providers": {"fake": fake}}))
    run = avatar(avatar_env, agent_home.workdir, "-p", "fake", "chat", "--permission", "allow",
                 "go")  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert (agent_home.workdir / "inside.txt").read_text() == "made\n"
    assert sorted(os.listdir(outside)) == ["secret"]
    assert _protected(agent_home.workdir) == before
    assert not git_attack.users_git_status_runs_it(agent_home.workdir, _marker(outside))
    assert SECRET not in run.stdout


def test_an_agent_writes_its_own_state_inside_its_walls(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    """The walls leave an agent its own home: a session saved by Claude Code and resumed."""
    first = avatar(avatar_env, agent_home.workdir, "-p", "claude", "chat", "remember PELICAN")
    assert first.returncode == 0, first.stderr
    sessions = list((agent_home.claude_dir / "projects").glob("*/*.jsonl"))
    assert len(sessions) == 1 and "PELICAN" in sessions[0].read_text()
    again = avatar(avatar_env, agent_home.workdir, "-p", "claude", "chat", "--continue", "and?")
    assert again.returncode == 0, again.stderr
    assert "continued" in again.stderr


def _claude_bash(home: AgentHome, server: FakeModelServer, command: str) -> str:
    """Run `command` through Claude Code's own Bash tool; the tool's result the model was shown
    next."""
    api, tool, args = TOOLS["claude"]
    server.script(api, Reply.tool_call(tool, args(command)), Reply.text("done"))
    run = avatar(avatar_env(home), home.workdir, "-p", "claude", "chat", "--permission", "allow",
                 "go", timeout=180)  # fmt: skip
    assert run.returncode == 0, run.stderr
    last = [r for r in server.requests_for(api) if r.is_main][-1]
    [result] = [b for b in last.json()["messages"][-1]["content"] if b["type"] == "tool_result"]
    return json.dumps(result["content"])


def test_claudes_bash_cannot_reach_avatars_server(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    """A hook or a Bash call of the agent connecting to avatar's server (which runs outside the
    walls) finds no socket there."""
    env = avatar_env(agent_home)
    with serving(env, agent_home.workdir):
        code = (
            "import socket; s = socket.socket(socket.AF_UNIX); "
            f's.connect("{socket_of(env)}"); s.sendall(b"{{\\"op\\": \\"ps\\"}}\\n"); '
            'print("ANSWER", s.recv(4096))'
        )
        shown = _claude_bash(agent_home, model_server, f"{sys.executable} -c '{code}'")
    assert "ANSWER" not in shown and "Errno 2" in shown, shown


def test_claudes_bash_cannot_read_another_processs_environment(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    """An agent runs in a PID namespace of its own: the environment of another process of the
    user (here one holding a secret) is not in its /proc."""
    secret = "ENVIRON-SECRET-2b7c"
    other = subprocess.Popen(["sleep", "300"], env={"PATH": os.defpath, "TOKEN": secret})
    try:
        shown = _claude_bash(agent_home, model_server, f"cat /proc/{other.pid}/environ")
    finally:
        other.kill()
        other.wait()
    assert secret not in shown and "No such file" in shown, shown
