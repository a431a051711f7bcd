"""Several sessions on one real agent process (`avatar.bridges.acp.shared`) through the server:
for codex-acp, claude-agent-acp and Gemini CLI, one-shots asked at the same moment each get
the answer to their own prompt, all on the agent the server runs for the project (none is
started for them), and back-to-back ones after them too."""

from __future__ import annotations

import json
import re

import pytest

from avatar.providers.registry import shipped
from tests.support.drive import avatar, start
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, RecordedRequest, Reply
from tests.support.served import descendants, processes_with, serving

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _echo(request: RecordedRequest) -> Reply:
    """The answer to the prompt the request carries: `echo NAME` for `ask-NAME-end`."""
    asked = re.findall(r"ask-(\w+)-end", json.dumps(request.body))
    return Reply.text(f"echo {asked[-1] if asked else 'nothing'}")


@pytest.mark.parametrize("provider", ["codex", "claude-acp", "gemini"])
def test_one_shots_at_once_share_the_agent_and_keep_their_answers(
    provider: str, model_server: FakeModelServer, agent_home: AgentHome
) -> None:
    spec = shipped()[provider]
    require_bridges(spec.command[0])
    env = avatar_env(agent_home)
    env.pop("OPENAI_BASE_URL", None)
    cwd = agent_home.workdir
    api = {"codex": "responses", "claude-acp": "anthropic", "gemini": "gemini"}[provider]
    model_server.queue(api).extend([_echo] * 20)

    def agents(server: int) -> list[int]:
        return [p for p in processes_with(spec.command[0]) if p in descendants(server)]

    with serving(env, cwd) as server:
        for _ in range(2):  # the first starts an agent, the second runs on the warm one
            run = avatar(env, cwd, "-p", provider, "chat", "ask-warm-end", timeout=120)
            assert run.returncode == 0 and run.stdout == "echo warm\n", run.stderr
        running = set(agents(server.pid))  # (the first chat's own too: its session is kept)
        chats = {name: start(env, cwd, "-p", provider, "chat", f"ask-{name}-end") for name in "abc"}
        for name, chat in chats.items():
            out, err = chat.communicate(timeout=180)
            assert chat.returncode == 0 and out == f"echo {name}\n", err
        for name in ("d", "e"):  # and back to back
            run = avatar(env, cwd, "-p", provider, "chat", f"ask-{name}-end", timeout=120)
            assert run.returncode == 0 and run.stdout == f"echo {name}\n", run.stderr
        assert set(agents(server.pid)) == running  # no agent started for any of them
