"""What the maintained ACP adapters offer through the protocol, driven through avatar's public
API against the real agents: a model switch through the session's config options, and
deleting a session through `session/delete` (the agent's own list no longer has it; codex's
only archives, so codex deletes through its store: test_codex_delete_fork.py)."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

import pytest

from avatar.core.events import TextDelta
from avatar.engine.engine import Engine
from tests.support.drive import avatar
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

AGENTS = [
    ("codex", "codex-acp", "responses", "gpt-6-astra"),
    # Not sonnet: that is what claude-agent-acp starts with, so a switch to it changes nothing.
    ("claude-acp", "claude-agent-acp", "anthropic", "haiku"),
]


def _engine(home: AgentHome, provider: str) -> Engine:
    env = avatar_env(home)
    env.pop("OPENAI_BASE_URL", None)
    return Engine.from_config(
        home.workdir, provider=provider, env=env, home=Path(env["AVATAR_HOME"])
    )


async def _say(engine: Engine, text: str) -> str:
    return "".join([e.text async for e in engine.send(text) if isinstance(e, TextDelta)])


@pytest.mark.parametrize(("provider", "program", "api", "model"), AGENTS)
def test_model_switch_reaches_the_model_request(
    agent_home: AgentHome,
    model_server: FakeModelServer,
    provider: str,
    program: str,
    api: str,
    model: str,
) -> None:
    require_bridges(program)
    model_server.script(api, "first", "second")

    async def go() -> None:
        engine = _engine(agent_home, provider)
        try:
            await engine.open()
            assert await _say(engine, "say PLOVER") == "first"
            await engine.set_model(model)
            assert engine.status().model == model
            assert await _say(engine, "say DUNLIN") == "second"
        finally:
            await engine.close()

    asyncio.run(go())

    def model_of(word: str) -> str | None:
        # By the prompt it answers: some agents send side requests of their own after a turn.
        asked = [r for r in model_server.requests_for(api) if word in r.last_user_text()]
        return asked[0].model if asked else None

    first, second = model_of("PLOVER"), model_of("DUNLIN")
    assert first != second and second is not None and model in second, (first, second)


@pytest.mark.parametrize(("provider", "program", "api", "model"), AGENTS[1:])
def test_delete_goes_through_the_agent(
    agent_home: AgentHome,
    model_server: FakeModelServer,
    provider: str,
    program: str,
    api: str,
    model: str,
) -> None:
    require_bridges(program)
    model_server.script(api, "kept", "doomed")
    env = avatar_env(agent_home)
    avatar = str(Path(sys.executable).parent / "avatar")
    ids = []
    for text in ("keep me", "delete me"):
        out = subprocess.run(
            [avatar, "-p", provider, "chat", text],
            env=env,
            cwd=agent_home.workdir,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        ids.append(re.search(r"session: (\S+)", out.stderr).group(1))  # type: ignore[union-attr]
    keep, doomed = ids
    out = subprocess.run(
        [avatar, "-p", provider, "session", "delete", doomed, "--yes"],
        env=env,
        cwd=agent_home.workdir,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0 and f"deleted {provider} session {doomed}" in out.stderr

    async def agent_list() -> list[str]:
        engine = _engine(agent_home, provider)
        try:
            listed = await engine.agent.refresh(provider)
            return [s.id for s in listed]
        finally:
            await engine.close()

    listed = asyncio.run(agent_list())
    assert keep in listed and doomed not in listed


def test_not_logged_in_is_one_line_with_the_fix(agent_home: AgentHome) -> None:
    require_bridges("gemini")
    env = avatar_env(agent_home)
    env.pop("GEMINI_API_KEY", None)
    out = avatar(env, agent_home.workdir, "-p", "gemini", "chat", "hi", timeout=120)
    assert out.returncode == 1 and out.stdout == ""
    [line] = out.stderr.splitlines()
    assert line.startswith("avatar: gemini requires authentication")
    assert "set GEMINI_API_KEY, or run `gemini` once to log in" in line
