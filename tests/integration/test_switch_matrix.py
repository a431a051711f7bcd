"""Switching provider mid-project with the real agent CLIs and the native agent against the
fake model server, for each of the 12 ordered pairs among native, claude, codex and gemini:
two turns on A, a switch to B, a third turn — B's first request carries A's two requests, the
goal and the file A wrote — then back to A, whose session is reopened: its next request carries
its own earlier turns and what happened on B."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest

from avatar.core.events import TextDelta
from avatar.engine.engine import Engine
from tests.support.drive import backdate_gemini
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PROVIDERS = ("native", "claude", "codex", "gemini")
API = {"native": "chat", "claude": "anthropic", "codex": "responses", "gemini": "gemini"}
BINARY = {"claude": "claude", "codex": "codex-acp", "gemini": "gemini"}
FIRST = "FIRST: write the parser into parser.py"
SECOND = "SECOND: keep it under fifty lines"
THIRD = "THIRD: now add a test"
FOURTH = "FOURTH: and run it"
PAIRS = list(itertools.permutations(PROVIDERS, 2))


def engine_for(home: AgentHome, provider: str) -> Engine:
    env = avatar_env(home)
    return Engine.from_config(
        home.workdir, provider=provider, permission="allow", env=env, home=Path(env["AVATAR_HOME"])
    )


async def say(engine: Engine, text: str) -> str:
    return "".join([e.text async for e in engine.send(text) if isinstance(e, TextDelta)])


def main_requests(server: FakeModelServer, provider: str) -> list[str]:
    return [r.all_text() for r in server.requests_for(API[provider]) if r.is_main]


@pytest.mark.parametrize(("a", "b"), PAIRS, ids=[f"{a}-to-{b}" for a, b in PAIRS])
def test_switch_and_return(
    agent_home: AgentHome, model_server: FakeModelServer, a: str, b: str
) -> None:
    require_bridges(*(BINARY[p] for p in (a, b) if p in BINARY))
    if a == "native":  # a real write, so the handoff lists a file A changed
        write = Reply.tool_call("write", {"path": "parser.py", "content": "def parse(): ...\n"})
        model_server.script("chat", write, "Wrote parser.py.")
    else:
        model_server.script(API[a], "I wrote parser.py.")
    model_server.script(API[a], "Kept short.")
    model_server.script(API[b], "Test added.")
    model_server.script(API[a], "Ran it.")

    async def go() -> tuple[str, str, str]:
        engine = engine_for(agent_home, a)
        try:
            first = await engine.open()
            assert "parser.py" in await say(engine, FIRST)
            assert await say(engine, SECOND) == "Kept short."
            seeded = await engine.switch_provider(b)
            assert await say(engine, THIRD) == "Test added."
            backdate_gemini(agent_home, a, first.session_id)
            back = await engine.switch_provider(a)
            assert await say(engine, FOURTH) == "Ran it."
            return first.session_id, seeded.session_id, back.session_id
        finally:
            await engine.close()

    a_id, b_id, back_id = asyncio.run(go())
    if a == "native":
        assert (agent_home.workdir / "parser.py").exists()

    on_b = main_requests(model_server, b)[0]
    assert FIRST in on_b and SECOND in on_b and THIRD in on_b
    assert f"## Goal\n{FIRST}" in on_b
    if a == "native":
        assert "## Files changed\n- parser.py" in on_b

    assert back_id == a_id  # a return, not a restart
    on_a = main_requests(model_server, a)[-1]
    assert FIRST in on_a and SECOND in on_a  # A's own turns, from its reopened session
    assert THIRD in on_a and FOURTH in on_a  # what happened on B, then the new request

    engine = engine_for(agent_home, a)
    links = engine.library.lineage()
    assert links[f"{b}/{b_id}"].parent == f"{a}/{a_id}"
    titles = {s.id: s.title or "" for s in engine.sessions()}
    assert "handed over" not in titles.get(b_id, "")


@pytest.mark.parametrize(("a", "b"), [("codex", "native"), ("native", "claude")])
def test_summarize_hands_over_the_left_agent_s_own_summary(
    agent_home: AgentHome, model_server: FakeModelServer, a: str, b: str
) -> None:
    """`/provider B --summarize`: A's agent is asked for a summary (one more turn on A), and
    B's first request carries it on top of the structured handoff."""
    require_bridges(*(BINARY[p] for p in (a, b) if p in BINARY))
    model_server.script(API[a], "Lexer started.", "SUMMARY-7 lexer half done, tests left.")
    model_server.script(API[b], "On it.")

    async def go() -> None:
        engine = engine_for(agent_home, a)
        try:
            await engine.open()
            await say(engine, FIRST)
            await engine.switch_provider(b, summarize=True)
            assert await say(engine, THIRD) == "On it."
        finally:
            await engine.close()

    asyncio.run(go())
    asked = main_requests(model_server, a)[-1]
    assert "Without calling any tools, summarize this session" in asked and FIRST in asked
    on_b = main_requests(model_server, b)[0]
    top = on_b.index(f"## Summary by {a}, in its own words\nSUMMARY-7 lexer half done")
    assert top < on_b.index(f"## Goal\n{FIRST}") and THIRD in on_b


def test_ping_pong_returns_to_both_sessions(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    """native → codex → native → codex: two continuous sessions, each handed only what
    happened on the other since; no title carries handoff text."""
    require_bridges("codex-acp")
    model_server.script("chat", "n1", "n2")
    model_server.script("responses", "c1", "c2")

    async def go() -> list[str]:
        engine = engine_for(agent_home, "native")
        try:
            ids = [(await engine.open()).session_id]
            await say(engine, "PING-1 build the lexer")
            ids.append((await engine.switch_provider("codex")).session_id)
            await say(engine, "PONG-1 add tests")
            ids.append((await engine.switch_provider("native")).session_id)
            await say(engine, "PING-2 fix the bug")
            ids.append((await engine.switch_provider("codex")).session_id)
            await say(engine, "PONG-2 ship it")
            return ids
        finally:
            await engine.close()

    native_1, codex_1, native_2, codex_2 = asyncio.run(go())
    assert native_2 == native_1 and codex_2 == codex_1
    last_codex = main_requests(model_server, "codex")[-1]
    assert "PONG-1 add tests" in last_codex and "c1" in last_codex  # its own earlier turn
    assert "PING-2 fix the bug" in last_codex and "PONG-2 ship it" in last_codex
    delta = last_codex.split("You are back in this session", 1)[1]
    assert "PING-1" not in delta  # only what happened on native since
    engine = engine_for(agent_home, "native")
    sessions = engine.sessions()
    assert len(sessions) == 2
    titles = {s.provider: s.title for s in sessions}
    assert titles["native"] == "PING-1 build the lexer"
    # codex names a thread itself, from a model call after its first turn, when that call ends
    # before codex is left (the fake model names it so); else its first prompt titles it
    assert titles["codex"] in {"PONG-1 add tests", "Fake session title"}


IMPORTS = [("codex", "native"), ("codex", "claude"), ("native", "codex")]


@pytest.mark.parametrize(("source", "target"), IMPORTS, ids=[f"{a}-to-{b}" for a, b in IMPORTS])
def test_import_gives_real_earlier_messages(
    agent_home: AgentHome, model_server: FakeModelServer, source: str, target: str
) -> None:
    """`/provider TARGET --import`: the source's conversation written into the target's own
    store and opened with its own resume (or load): the next request has the earlier turns as
    separate messages, not one pasted text."""
    require_bridges(*(BINARY[p] for p in (source, target) if p in BINARY))
    model_server.script(API[source], "Source one.", "Source two.")
    model_server.script(API[target], "Target here.")

    async def go() -> tuple[str, str, str]:
        engine = engine_for(agent_home, source)
        try:
            first = (await engine.open()).session_id
            await say(engine, FIRST)
            await say(engine, SECOND)
            started = await engine.switch_provider(target, imported=True)
            assert await say(engine, THIRD) == "Target here."
            return first, started.session_id, started.how
        finally:
            await engine.close()

    source_id, new_id, how = asyncio.run(go())
    assert how in ("resumed", "loaded")  # its own reopen, not a new session
    request = [r for r in model_server.requests_for(API[target]) if r.is_main][-1]
    convo = [(m.role, m.text.strip()) for m in request.messages() if m.role != "system"]
    earlier = [
        ("user", FIRST),
        ("assistant", "Source one."),
        ("user", SECOND),
        ("assistant", "Source two."),
    ]
    assert [c for c in convo if c in earlier] == earlier
    assert THIRD in convo[-1][1] and "handed over" not in request.all_text()
    engine = engine_for(agent_home, target)
    assert engine.library.lineage()[f"{target}/{new_id}"].parent == f"{source}/{source_id}"
    shown = engine.transcript(new_id)
    assert [m.text for m in shown.messages][:2] == [FIRST, "Source one."]
