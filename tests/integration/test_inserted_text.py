"""What an agent CLI inserts into a conversation is not recorded as conversation, with the real
CLIs: Gemini's `<session_context>` (replayed as a user message when a session is reopened)
never becomes the goal of a handoff, and codex's warning about a model it has no metadata for
(streamed as the first answer text) stays out of avatar's copy of the turns and the handoff."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from avatar.core.events import TextDelta
from avatar.engine.engine import Engine
from tests.support.drive import backdate_gemini
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def engine_for(home: AgentHome, provider: str) -> Engine:
    env = avatar_env(home)
    return Engine.from_config(
        home.workdir, provider=provider, permission="allow", env=env, home=Path(env["AVATAR_HOME"])
    )


async def say(engine: Engine, text: str) -> str:
    return "".join([e.text async for e in engine.send(text) if isinstance(e, TextDelta)])


def last_main(server: FakeModelServer, api: str) -> str:
    return [r.all_text() for r in server.requests_for(api) if r.is_main][-1]


def test_gemini_s_session_context_is_no_turn_of_a_reopened_session(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("gemini")
    model_server.script("gemini", "Gemini one.", "Gemini two.")
    model_server.script("chat", "Native here.")

    async def go() -> list[str]:
        engine = engine_for(agent_home, "gemini")
        try:
            first = await engine.open()
            await say(engine, "GEMINI-ONE: plan the cache")
        finally:
            await engine.close()
        backdate_gemini(agent_home, "gemini", first.session_id)
        engine = engine_for(agent_home, "gemini")
        try:
            again = await engine.agent.resume(first.session_id)
            assert again.session_id == first.session_id
            await say(engine, "GEMINI-TWO: and the eviction")
            history = again.history()
            assert history is not None
            await engine.switch_provider("native")
            await say(engine, "NATIVE: carry on")
            return [m.text for m in history.messages if m.role == "user"]
        finally:
            await engine.close()

    users = asyncio.run(go())
    assert users == ["GEMINI-ONE: plan the cache", "GEMINI-TWO: and the eviction"]
    on_native = last_main(model_server, "chat")
    assert "## Goal\nGEMINI-ONE: plan the cache" in on_native
    assert "<session_context>" not in on_native


def test_codex_s_model_warning_is_no_answer(tmp_path: Path, model_server: FakeModelServer) -> None:
    require_bridges("codex-acp")
    home = AgentHome(tmp_path / "agent", model_server, codex_model="no-such-model-7")
    model_server.script("responses", "Codex answer.")
    model_server.script("chat", "Native here.")

    async def go() -> tuple[str, str]:
        engine = engine_for(home, "codex")
        try:
            started = await engine.open()
            shown = await say(engine, "CODEX: explain the parser")
            await engine.switch_provider("native")
            await say(engine, "NATIVE: carry on")
            return started.session_id, shown
        finally:
            await engine.close()

    sid, shown = asyncio.run(go())
    assert "Model metadata for `no-such-model-7` not found" in shown  # codex did warn
    copy = Path(avatar_env(home)["AVATAR_HOME"]) / "records" / "turns" / "codex" / f"{sid}.jsonl"
    said = [json.loads(line) for line in copy.read_text().splitlines()]
    assert [(m["role"], m["text"]) for m in said] == [
        ("user", "CODEX: explain the parser"),
        ("assistant", "Codex answer."),
    ]
    on_native = last_main(model_server, "chat")
    assert "ASSISTANT: Codex answer." in on_native and "Model metadata" not in on_native
