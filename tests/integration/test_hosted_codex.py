"""A REPL on the real codex-acp (against the fake model server) lists its session with the
running server (`avatar serve` in the background): `avatar ps --json` shows it, `avatar
attach` in a second terminal shows its earlier turn, a prompt typed there is answered on both
screens (codex's model request carrying the REPL's turn before it: one conversation), and
after `serve --stop` the REPL goes on answering."""

from __future__ import annotations

import re

import pytest

from tests.e2e.test_hosted_repl import wait_ps
from tests.support.drive import avatar
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.served import serving
from tests.support.tmux import Terminal

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def test_a_codex_repl_session_is_attached_to_and_answered_from_attach(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    model_server.script(
        "responses",
        Reply.text("Codex heard the pelican."),
        Reply.text("Codex answers the attached terminal."),
        Reply.text("Codex still answers alone."),
    )
    env, cwd = avatar_env(agent_home), agent_home.workdir
    repl_argv = ["avatar", "-p", "codex", "repl"]
    with serving(env, cwd) as server, Terminal(repl_argv, env, cwd) as repl:
        repl.wait_for("avatar REPL", timeout=60)
        repl.type("remember the pelican")
        repl.wait_for("Codex heard the pelican.", timeout=90)
        info = wait_ps(env, cwd, lambda s: s["state"] == "idle", timeout=60)
        assert info["provider"] == "codex"
        assert info["clients"] == [f"repl:{repl.pid()}"]
        sid = info["session_id"]
        assert re.search(rf"session: {sid} \(codex, new\)", repl.screen())
        with Terminal(["avatar", "attach", sid], env, cwd) as att:
            screen = att.wait_for("Codex heard the pelican.", timeout=60)
            assert "› remember the pelican" in screen  # the conversation so far
            att.type("what did I say?")
            att.wait_for("Codex answers the attached terminal.", timeout=90)
            screen = repl.wait_for("Codex answers the attached terminal.", timeout=30)
            assert re.search(r"› \(attach:\d+\) what did I say\?", screen)
            wait_ps(env, cwd, lambda s: s["state"] == "idle")
        mains = [r for r in model_server.requests_for("responses") if r.is_main]
        assert "remember the pelican" in mains[-1].all_text()  # one conversation
        assert "what did I say?" in mains[-1].last_user_text()
        assert avatar(env, cwd, "serve", "--stop").returncode == 0
        assert server.wait(15) == 0
        repl.wait_for("the server stopped: this session is no longer listed")
        repl.type("still there?")
        repl.wait_for("Codex still answers alone.", timeout=90)
