"""A fork's name is its parent's, with a fork mark — never the context handed over into the
parent (issue 31). The real claude-agent-acp names a fork "<the parent's title> (fork)", and a
parent opened with a handoff, whose title the model did not make (the fake model server
refuses Claude Code's title request here), is titled by its whole first prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.drive import Avatar
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def test_a_claude_acp_fork_of_a_handed_over_session_is_named_after_its_parent(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("claude-agent-acp", "claude")
    model_server.side_replies["claude-structured"] = Reply.error(400, "no titles today")
    avatar = Avatar(agent_home, avatar_env(agent_home), timeout=150)
    source = avatar.session(avatar("-p", "native", "chat", "the word is HERON"))[0]
    parent = avatar.session(avatar("-p", "claude-acp", "chat", "--from", source, "go on"))[0]

    fork = avatar("session", "fork", parent).stdout.strip()

    info = json.loads(avatar("session", "info", fork, "--json").stdout)
    assert (info["name"], info["title"]) == ("go on (fork)", "go on (fork)")
    # Where Claude Code itself reads the name (`claude --resume`): its last custom title.
    lines = [json.loads(x) for x in Path(info["path"]).read_text().splitlines()]
    titles = [x["customTitle"] for x in lines if x.get("type") == "custom-title"]
    assert titles[-1] == "go on (fork)"
