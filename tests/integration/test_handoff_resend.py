"""A handoff sent with a prompt that failed before the agent answered is sent again with the
next prompt (issue 23, 1): the agent never saw it. The native agent against the fake model
server, which refuses the first prompt of the seeded session."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from avatar.core.events import Error, TextDelta, TurnFinished
from avatar.engine.engine import Engine
from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_a_handoff_whose_prompt_failed_goes_with_the_next(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.script("chat", "Noted.", Reply.error(400, "model not found"), "On it.")
    env = avatar_env(agent_home)

    def engine() -> Engine:
        return Engine.from_config(
            agent_home.workdir, provider="native", env=env, home=Path(env["AVATAR_HOME"])
        )

    async def go() -> tuple[list[str], str]:
        first = engine()
        try:
            await first.open()
            [e async for e in first.send("GOAL: a zebra parser")]
            source = first.current
            assert source is not None
        finally:
            await first.close()
        second = engine()
        try:
            await second.open(source=source.session_id)
            failed = [e async for e in second.send("go on")]
            kinds = [type(e).__name__ for e in failed if isinstance(e, Error | TurnFinished)]
            assert second.status().handoff is not None  # still waiting for the next prompt
            said = [e.text async for e in second.send("again") if isinstance(e, TextDelta)]
            return kinds, "".join(said)
        finally:
            await second.close()

    kinds, answer = asyncio.run(go())
    assert "Error" in kinds and answer == "On it."
    main = [r for r in model_server.requests_for("chat") if r.is_main]
    assert "zebra parser" in main[-1].all_text() and "again" in main[-1].all_text()
