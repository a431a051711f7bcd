"""An agent's start-up banner is no answer (issue 31): the fake ACP agent, configured as
provider `fake`, says a banner unasked as each session opens, right after answering the open
(as agents that print one from a timer do), racing the first prompt. Through the installed
`avatar`: the answer on stdout, avatar's copy of the turns (`session show`) and a handoff of
the session hold only the answer; the banner is one notice on stderr."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from avatar.providers.registry import shipped
from tests.support.acp_agent import provider_entry
from tests.support.acp_client import AcpClient
from tests.support.drive import Avatar
from tests.support.homes import AgentHome, avatar_env, bridge_bin, require_bridges
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

BANNER = "Welcome to BannerAgent 1.0 (type /help for help)"


def test_a_banner_said_as_a_session_opens_is_a_notice_not_an_answer(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    env = avatar_env(agent_home)
    fake = provider_entry(agent_home.root / "fake-state", load=True, list=True, banner=BANNER)
    Path(env["AVATAR_CONFIG"]).write_text(json.dumps({"providers": {"fake": fake}}))
    avatar = Avatar(agent_home, env, timeout=120)

    said = avatar("-p", "fake", "chat", "the word is HERON")
    assert said.stdout == "reply 1 to 'the word is HERON' (history 0)\n"
    assert avatar.notices(said) == [f"notice: fake said, outside any turn: {BANNER}"]
    sid = avatar.session(said)[0]

    assert BANNER not in avatar("session", "show", sid).stdout
    model_server.script("chat", "Noted.")
    avatar("-p", "native", "chat", "--from", sid, "go on")
    handed = model_server.requests_for("chat")[-1].all_text()
    assert "the word is HERON" in handed and BANNER not in handed


@pytest.mark.parametrize("provider", ["codex", "claude-acp", "gemini"])
def test_the_shipped_agents_say_nothing_unasked_as_a_session_opens(
    provider: str, agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    """Quirk `quiet_open` (their first prompt goes at once, without the banner guard's wait)
    holds for each of them: a second after `session/new`, the session has had no text."""
    spec = shipped()[provider]
    require_bridges(spec.command[0])
    env = {**avatar_env(agent_home), **spec.env}
    env.pop("OPENAI_BASE_URL", None)
    argv = [bridge_bin(spec.command[0]), *spec.command[1:]]
    assert "quiet_open" in spec.quirks
    with AcpClient(argv, env=env, cwd=agent_home.workdir) as client:
        client.initialize()
        params = {"cwd": str(agent_home.workdir), "mcpServers": []}
        sid = client.request("session/new", params)["sessionId"]
        time.sleep(1.0)
        client.request("session/new", params)  # (its answer comes after whatever was said)
        said = [u for u in client.of(sid) if u.get("sessionUpdate") in TEXT]
        assert said == [], said
        assert client.of(sid) or provider == "gemini", "nothing at all came: the test saw nothing"


#: The updates that carry what an agent says (a banner would be one of them).
TEXT = {"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"}
