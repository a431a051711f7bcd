"""`chat --from SESSION`: a new session opens with the other session's conversation."""

from __future__ import annotations

import json

from tests.support.drive import run_avatar
from tests.support.homes import AgentHome
from tests.support.model_server import FakeModelServer, Reply


def test_from_seeds_a_new_session_titled_by_the_users_words(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(Reply.text("The plan is to port the lexer."), Reply.text("On it."))
    first = run_avatar(agent_home, "-p", "native", "chat", "make a plan")
    assert first.returncode == 0, first.stderr
    source = json.loads(run_avatar(agent_home, "session", "list", "--json").stdout)[0]["id"]

    seeded = run_avatar(agent_home, "-p", "native", "chat", "--from", source[:10], "carry on")
    assert seeded.returncode == 0, seeded.stderr
    assert "On it." in seeded.stdout
    request = model_server.requests_for("chat")[-1].all_text()
    assert "make a plan" in request and "The plan is to port the lexer." in request

    sessions = json.loads(run_avatar(agent_home, "session", "list", "--json").stdout)
    newest = sessions[0]
    assert newest["id"] != source
    assert newest["title"] == "carry on"
