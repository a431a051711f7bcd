"""Agents the server starts are walled as any other (issue 24; issue 20's walls): codex's own
shell tool, asked through `avatar serve` to write outside the project, into `.git` and to read
a secret, changes nothing but the project, both for the session's first agent and for the one
the server kept warm and hands the next session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.integration.test_agent_walls import SECRET, TOOLS, _attack, _project, _protected
from tests.support.drive import SESSION_LINE, avatar
from tests.support.homes import AgentHome, avatar_env, persistent_tmpdir, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.served import serving

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
