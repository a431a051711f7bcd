"""Agents the server starts are walled as any other (issue 24; issue 20's walls): codex's own
shell tool, asked through `avatar serve` to write outside the project, into `.git` and to read
a secret, changes nothing but the project, both for the session's first agent and for the one
the server kept warm and hands the next session; and a hook of the agent's asks the server
itself for work, and gets none (issue 30)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.integration.test_agent_walls import SECRET, TOOLS, _attack, _project, _protected
from tests.server.test_walled_peers import raw_attack, still_serving
from tests.support.drive import SESSION_LINE, avatar
from tests.support.homes import AgentHome, avatar_env, persistent_tmpdir, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.served import serving, socket_of

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def test_agents_the_server_starts_and_keeps_warm_stay_inside(
    model_server: FakeModelServer, tmp_path: Path
) -> None:
    require_bridges("codex-acp")
    with persistent_tmpdir() as codex_home:
        home = AgentHome(
            tmp_path / "agent",
            model_server,
            codex_home=codex_home / ".codex",
            codex_sandbox="danger-full-access",
        )
        outside = tmp_path / "outside"
        before = _project(home, outside)
        api, tool, args = TOOLS["codex"]
        env = avatar_env(home)
        with serving(env, home.workdir):
            for turn in ("first", "second"):  # the second one's agent was the warm one
                (home.workdir / "inside.txt").unlink(missing_ok=True)
                model_server.script(
                    api, Reply.tool_call(tool, args(_attack(outside))), Reply.text("done")
                )
                run = avatar(env, home.workdir, "-p", "codex", "chat", "--permission", "allow",
                             turn, timeout=180)  # fmt: skip
                assert run.returncode == 0, run.stderr
                assert SESSION_LINE.search(run.stderr)
                assert (home.workdir / "inside.txt").read_text() == "made\n"
                assert sorted(os.listdir(outside)) == ["secret"]
                assert _protected(home.workdir) == before
                assert SECRET not in run.stdout


def test_a_claude_hook_gets_nothing_from_the_server(
    agent_home: AgentHome, avatar_env: dict[str, str], model_server: FakeModelServer, tmp_path: Path
) -> None:
    """A hook of Claude Code's (a user-level one, in ~/.claude/settings.json) runs inside the
    agent's walls when avatar starts Claude Code: asking the server for `ps`, a chat under
    its own config and `stop` gets it nothing (no marker, the server still serves)."""
    require_bridges("claude")
    project = agent_home.workdir
    outside = tmp_path / "outside"
    outside.mkdir()
    line = raw_attack(socket_of(avatar_env), project, outside, agent_home.home)
    ran = project / "hook-ran.txt"
    hook = {"type": "command", "command": f"({line}) > {ran} 2>&1"}
    settings = {"hooks": {"UserPromptSubmit": [{"hooks": [hook]}]}}
    (agent_home.claude_dir / "settings.json").write_text(json.dumps(settings))
    model_server.anthropic.append(Reply.text("done"))
    with serving(avatar_env, project) as server:
        run = avatar(avatar_env, project, "-p", "claude", "chat", "hi", timeout=180)
        assert not (outside / "marker").exists()
        still_serving(server, avatar_env)
        assert run.returncode == 0, run.stderr
        said = ran.read_text()  # (the hook ran, and asked)
        assert all(f" {op} " in said for op in ("ps", "run", "stop")), said
        assert '"live"' not in said
