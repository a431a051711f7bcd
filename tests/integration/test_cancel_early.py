"""A cancel that comes while a turn starts, before its prompt reached the agent (the files
being recorded for rewind), ends that turn as cancelled and nothing reaches the model: it was
lost before, and the turn ran on (a Ctrl-C on a served chat in that moment did nothing)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from avatar.core.events import BaseEvent, TurnFinished
from avatar.engine.engine import Engine
from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_a_cancel_before_the_prompt_is_sent_ends_the_turn(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.script("chat", "First.", "Second.")
    env = avatar_env(agent_home)
    engine = Engine.from_config(
        agent_home.workdir, provider="native", env=env, home=Path(env["AVATAR_HOME"])
    )

    async def go() -> tuple[list[BaseEvent], list[BaseEvent]]:
        try:
            await engine.open()
            turn = engine.send("say something")
            first = asyncio.ensure_future(turn.__anext__())  # the turn starts ...
            await asyncio.sleep(0)
            await engine.cancel()  # ... and is cancelled before its prompt went out
            cancelled = [await first, *[e async for e in turn]]
            after = [e async for e in engine.send("and now?")]
            return cancelled, after
        finally:
            await engine.close()

    cancelled, after = asyncio.run(go())
    ends = [e for e in cancelled if isinstance(e, TurnFinished)]
    assert [e.stop_reason for e in ends] == ["cancelled"], cancelled
    said = [r.all_text() for r in model_server.requests_for("chat") if r.is_main]
    assert not [text for text in said if "say something" in text], said
    assert any("First." in getattr(e, "text", "") for e in after), after
