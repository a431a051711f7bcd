"""Any ACP agent is a full citizen (issue: config ACP agents' sessions): the sessions avatar
opens on an agent from config are recorded by avatar, so they list, resolve by prefix and
without `-p`, show, and hand over, all without starting the agent.

The agent here is the fake ACP agent of the test kit, configured as `transport: acp` with
session/load and session/list on (its replies count the history it was given).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import drive
from tests.support.acp_agent import provider_entry
from tests.support.drive import Avatar
from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def avatar(agent_home: AgentHome, model_server: FakeModelServer) -> Avatar:
    """avatar with the fake ACP agent (load and list) as provider `fake`, from config."""
    env = avatar_env(agent_home)
    fake = provider_entry(agent_home.root / "fake-state", load=True, list=True)
    Path(env["AVATAR_CONFIG"]).write_text(json.dumps({"providers": {"fake": fake}}))
    return Avatar(agent_home, env, timeout=120)


def test_sessions_of_a_config_agent_list_resolve_and_show_without_it(avatar: Avatar) -> None:
    first = avatar("-p", "fake", "chat", "remember the word PELICAN")
    sid, provider, how = avatar.session(first)
    assert (provider, how) == ("fake", "new")
    assert "reply 1 to 'remember the word PELICAN'" in first.stdout

    listed = json.loads(avatar("session", "list", "--provider", "fake", "--json").stdout)
    assert [(s["id"], s["provider"]) for s in listed] == [(sid, "fake")]
    assert listed[0]["title"] == "remember the word PELICAN" and listed[0]["messages"] == 2
    everything = json.loads(avatar("session", "list", "--all", "--json").stdout)
    assert sid in [s["id"] for s in everything]

    info = json.loads(avatar("session", "info", sid[:8], "--json").stdout)
    assert (info["id"], info["provider"]) == (sid, "fake")
    shown = avatar("session", "show", sid[:8]).stdout
    assert "remember the word PELICAN" in shown and "reply 1 to" in shown

    # No -p: the prefix finds the fake agent's session, and the agent loads its history.
    again = avatar("chat", "--resume", sid[:8], "which word?")
    assert avatar.session(again) == (sid, "fake", "loaded")
    assert "reply 2 to 'which word?' (history 2)" in again.stdout


def test_from_a_config_agent_session_seeds_another_provider(
    avatar: Avatar, model_server: FakeModelServer
) -> None:
    first = avatar("-p", "fake", "chat", "the word is OSPREY")
    sid = avatar.session(first)[0]
    model_server.script("chat", "It was OSPREY.")
    seeded = avatar("-p", "native", "chat", "--from", sid[:8], "what was the word?")
    assert seeded.stdout.strip() == "It was OSPREY."
    sent = model_server.requests_for("chat")[-1].all_text()
    assert "the word is OSPREY" in sent and "what was the word?" in sent


def test_refresh_adds_sessions_the_agent_lists_that_avatar_did_not_open(
    avatar: Avatar, agent_home: AgentHome
) -> None:
    # A session opened by another client of the same agent (here: avatar with another home,
    # whose records this one does not share).
    other = dict(avatar.env, AVATAR_HOME=str(agent_home.root / "elsewhere"))
    proc = drive.avatar(
        other, agent_home.workdir, "-p", "fake", "chat", "made elsewhere", timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    sid = Avatar.session(proc)[0]
    before = json.loads(avatar("session", "list", "--provider", "fake", "--json").stdout)
    assert sid not in [s["id"] for s in before]
    after = json.loads(
        avatar("session", "list", "--provider", "fake", "--refresh", "--json").stdout
    )
    assert sid in [s["id"] for s in after]
    # From now on it resolves without asking the agent.
    info = json.loads(avatar("session", "info", sid[:8], "--json").stdout)
    assert (info["id"], info["provider"]) == (sid, "fake")
