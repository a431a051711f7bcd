"""The ACP bridge driving the REAL agents (codex-acp, claude-agent-acp, Gemini CLI) offline,
against the fake model server: new session → streamed answer → listed → agent restarted →
reopened by id (history replayed) → the next model request carries the earlier turn.

Gemini has no `session/list` (listed from disk) and a same-minute `session/load` bug that
destroys history: its test forces a load within the file's minute and proves the history
survives, then reopens the session from an earlier minute.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from avatar.bridges.acp import quirks as acp_quirks
from avatar.bridges.acp.bridge import ACPBridge
from avatar.bridges.base import BridgeContext, OpenRequest
from avatar.core.config import Settings
from avatar.core.errors import ProviderError
from avatar.core.events import BaseEvent, SessionStarted, TextDelta, TurnFinished, UserMessage
from avatar.core.loading import load_class
from avatar.providers.registry import BUILTIN
from avatar.sessions.store import SessionStore
from tests.support.drive import rename_gemini_files
from tests.support.homes import AgentHome, require_bridges
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

API = {"codex": "responses", "claude-acp": "anthropic", "gemini": "gemini"}
BINARY = {"codex": "codex-acp", "claude-acp": "claude-agent-acp", "gemini": "gemini"}

FIRST = "Remember the word PAPAYA."
FIRST_ANSWER = "Noted: the word is PAPAYA."
SECOND = "Which word did I ask you to remember?"
SECOND_ANSWER = "You asked me to remember PAPAYA."


def bridge_for(name: str, home: AgentHome, emitted: list[BaseEvent]) -> ACPBridge:
    """The bridge as the engine builds it, with the provider's store as its on-disk reader."""
    spec = BUILTIN[name]
    avatar_home = home.root / "avatar-home"
    assert spec.store
    ctx = BridgeContext(
        spec=spec,
        cwd=home.workdir,
        settings=Settings(),
        avatar_home=avatar_home,
        env=home.env,
        store=load_class(spec.store, SessionStore)(name, home.env, avatar_home),  # type: ignore[type-abstract]
        emit=emitted.append,
    )
    return ACPBridge(ctx)


async def restart(bridge: ACPBridge, session_id: str) -> SessionStarted:
    """What the engine does when an agent has stopped: start it again, reopen the session."""
    await bridge.stop()
    await bridge.start()
    return await bridge.open(OpenRequest("resume", session_id))


async def turn(bridge: ACPBridge, prompt: str) -> list[BaseEvent]:
    return [e async for e in bridge.send(prompt)]


def answer(events: list[BaseEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def last_main_request_text(server: FakeModelServer, api: str) -> str:
    main = [r for r in server.requests_for(api) if r.is_main]
    assert main, f"no {api} request reached the fake model server"
    return main[-1].all_text()


async def first_turn(bridge: ACPBridge, server: FakeModelServer, api: str) -> str:
    """Start, open a new session, run the first turn; the new session id."""
    server.script(api, Reply.text(FIRST_ANSWER), Reply.text(SECOND_ANSWER))
    await bridge.start()
    started = await bridge.open(OpenRequest("new"))
    assert started.how == "new"
    events = await turn(bridge, FIRST)
    assert sum(isinstance(e, TextDelta) for e in events) >= 2, "the answer should stream"
    assert answer(events) == FIRST_ANSWER
    assert events[-1] == TurnFinished(stop_reason="end_turn")
    return started.session_id


async def second_turn_sees_the_first(bridge: ACPBridge, server: FakeModelServer, api: str) -> None:
    events = await turn(bridge, SECOND)
    assert answer(events) == SECOND_ANSWER
    assert not any(e.replay for e in events)
    sent = last_main_request_text(server, api)
    assert FIRST in sent and FIRST_ANSWER in sent and SECOND in sent


async def listed_ids(bridge: ACPBridge, home: AgentHome) -> list[str]:
    """Session ids listed for the work dir the way continue-last finds them: `session/list`
    (every page) where the agent can list, else the provider's store. claude-agent-acp writes
    its transcript a moment after the turn ends, so give a fresh session a few seconds."""
    cwd = home.workdir.resolve()
    store = bridge.ctx.store
    assert store is not None
    for _ in range(50):
        if bridge.capabilities.can_list:
            sessions = await bridge.agent_sessions() or []
        else:
            sessions = store.list(cwd)
        if sessions:
            return [s.id for s in sessions]
        await asyncio.sleep(0.1)
    return []


def replayed_prompts(emitted: list[BaseEvent]) -> list[str]:
    return [e.text for e in emitted if isinstance(e, UserMessage) and e.replay]


@pytest.mark.parametrize("name", ["codex", "claude-acp"])
async def test_listed_restarted_resumed(
    name: str, agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges(BINARY[name])
    api = API[name]
    emitted: list[BaseEvent] = []
    bridge = bridge_for(name, agent_home, emitted)
    try:
        sid = await first_turn(bridge, model_server, api)
        caps = bridge.capabilities
        assert caps.can_list and caps.can_load and caps.can_resume and caps.can_continue_last
        assert sid in await listed_ids(bridge, agent_home)

        started = await restart(bridge, sid)
        assert (started.session_id, started.how) == (sid, "loaded")
        assert FIRST in replayed_prompts(emitted)
        await second_turn_sees_the_first(bridge, model_server, api)

        again = await bridge.open(OpenRequest("continue"))
        assert (again.session_id, again.how) == (sid, "continued")
        notices = [e for e in emitted if e.type == "notice"]
        assert notices == []
    finally:
        await bridge.stop()


async def test_claude_acp_fork(agent_home: AgentHome, model_server: FakeModelServer) -> None:
    require_bridges("claude-agent-acp")
    emitted: list[BaseEvent] = []
    bridge = bridge_for("claude-acp", agent_home, emitted)
    try:
        sid = await first_turn(bridge, model_server, "anthropic")
        assert bridge.capabilities.can_fork
        forked = await bridge.open(OpenRequest("fork", sid))
        assert forked.how == "forked" and forked.session_id != sid
        await second_turn_sees_the_first(bridge, model_server, "anthropic")
    finally:
        await bridge.stop()


def gemini_files(home: AgentHome, session_id: str) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in acp_quirks.gemini_session_files(home.env, session_id)}


async def test_gemini_history_survives_the_same_minute_and_resumes(
    agent_home: AgentHome, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_bridges("gemini")
    emitted: list[BaseEvent] = []
    bridge = bridge_for("gemini", agent_home, emitted)
    try:
        sid = await first_turn(bridge, model_server, "gemini")
        caps = bridge.capabilities
        assert caps.can_load and not caps.can_list and not caps.can_resume
        assert sid in await listed_ids(bridge, agent_home)  # from disk
        await bridge.stop()
        assert len(gemini_files(agent_home, sid)) == 1

        # 1. Within the file's minute, forced past avatar's guard: Gemini's bug fires (the
        #    load fails and wipes the messages) and avatar restores the file from its backup.
        await bridge.start()
        if 60 - time.time() % 60 < 3:
            await asyncio.sleep(60 - time.time() % 60 + 0.2)
        rename_gemini_files(agent_home, sid, acp_quirks.current_minute())
        history = gemini_files(agent_home, sid)
        monkeypatch.setattr(acp_quirks, "current_minute", lambda: "1999-01-01T00-00")
        started = await bridge.open(OpenRequest("resume", sid))
        monkeypatch.undo()
        assert started.how == "new" and started.session_id != sid
        restored, fallback = [e.message for e in emitted if e.type == "notice"][-2:]
        assert "restored it from its backup" in restored
        assert "No previous sessions found" in fallback
        await bridge.stop()
        assert gemini_files(agent_home, sid) == history, "gemini destroyed the history"

        # 2. Unforced, avatar refuses a same-minute load without touching the files: an error
        #    to retry a minute later, not a new session.
        emitted.clear()
        bridge.same_minute.limit = 0
        await bridge.start()
        with pytest.raises(ProviderError, match="before the clock minute turns"):
            await bridge.open(OpenRequest("resume", sid))
        assert bridge.session_id is None
        await bridge.stop()
        assert gemini_files(agent_home, sid) == history

        # 3. From an earlier minute the load works: history replayed, carried to the model.
        rename_gemini_files(agent_home, sid, "2001-01-01T00-00")
        emitted.clear()
        await bridge.start()
        started = await bridge.open(OpenRequest("resume", sid))
        assert (started.session_id, started.how) == (sid, "loaded")
        assert FIRST in replayed_prompts(emitted)
        await second_turn_sees_the_first(bridge, model_server, "gemini")

        # 4. The load left a message-less companion file that Gemini's start-up cleanup would
        #    delete together with the history; avatar removed it, so a restart keeps the
        #    history and continue-last (from disk) reopens it without waiting.
        await bridge.stop()
        (kept,) = gemini_files(agent_home, sid)
        assert acp_quirks.created_minute(kept) == "2001-01-01T00-00"
        await bridge.start()
        again = await bridge.open(OpenRequest("continue"))
        assert (again.session_id, again.how) == (sid, "continued")
        assert not any("waiting" in getattr(e, "message", "") for e in emitted)
    finally:
        await bridge.stop()
