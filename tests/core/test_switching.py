"""Switching provider: lineage recorded, a return reopens the earlier session with only what
happened since, `--new` forces a new one, handoff text is never a title (fake bridges)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from avatar.bridges.base import OpenRequest
from avatar.core.config import Settings
from avatar.core.errors import AvatarError
from avatar.core.events import BaseEvent, Notice
from avatar.engine.engine import Engine
from avatar.providers.registry import ProviderSpec
from tests.core.fake_bridge import FakeBridge

FAKE = "tests.core.fake_bridge:FakeBridge"
A, B = "a-resumable", "b-resumable"


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    # (the project beside avatar's home, which holds the rewind store: never where agents write)
    project = tmp_path / "project"
    project.mkdir()
    env = {"PATH": "/nonexistent", "HOME": str(tmp_path)}
    e = Engine(Settings(), project, env=env, home=tmp_path)
    for name in (A, B):
        e.registry.add(ProviderSpec(name=name, transport="acp", bridge=FAKE))
    FakeBridge.prompts = []
    return e


async def say(engine: Engine, text: str) -> str:
    """Send `text`; what the agent received."""
    [e async for e in engine.send(text)]
    return FakeBridge.prompts[-1]


async def test_ping_pong_keeps_two_continuous_sessions(engine: Engine) -> None:
    a = await engine.open(A)
    await say(engine, "GOAL build the lexer")
    await say(engine, "use nom, never regex")

    seen: list[BaseEvent] = []
    engine.subscribe(seen.append)
    b = await engine.switch_provider(B)
    assert b.session_id != a.session_id
    [notice] = [e.message for e in seen if isinstance(e, Notice)]
    assert re.fullmatch(
        rf"handing the conversation to {B}: ~\d+ tokens, the goal, 1 decisions, 4 recent messages",
        notice,
    )
    first_on_b = await say(engine, "third: add tests")
    assert first_on_b.startswith("third: add tests")
    assert "## Goal\nGOAL build the lexer" in first_on_b
    assert "use nom, never regex" in first_on_b

    links = engine.library.lineage()
    assert links[f"{B}/{b.session_id}"].parent == f"{A}/{a.session_id}"
    assert links[f"{A}/{a.session_id}"].children == [f"{B}/{b.session_id}"]

    back = await engine.switch_provider(A)
    assert back.session_id == a.session_id and back.how == "resumed"
    on_a = await say(engine, "fourth: run them")
    assert "You are back in this session" in on_a
    assert "third: add tests" in on_a  # what happened on B
    assert "GOAL build the lexer" not in on_a  # A knows its own turns

    again = await engine.switch_provider(B)
    assert again.session_id == b.session_id
    on_b = await say(engine, "fifth")
    assert "fourth: run them" in on_b and "third: add tests" not in on_b

    titles = {s.id: s.title for s in engine.sessions()}
    assert titles[a.session_id] == "GOAL build the lexer"
    assert titles[b.session_id] == "third: add tests"
    assert len(engine.sessions(A)) == 1 and len(engine.sessions(B)) == 1
    await engine.close()


async def test_new_forces_a_new_session_and_fresh_carries_nothing(engine: Engine) -> None:
    a = await engine.open(A)
    await say(engine, "GOAL one")
    await engine.switch_provider(B)
    await say(engine, "on b")
    newer = await engine.switch_provider(A, new=True)
    assert newer.session_id != a.session_id
    assert "on b" in await say(engine, "hello")  # a full handoff
    fresh = await engine.switch_provider(B, handoff=False)
    assert await say(engine, "plain") == "plain"
    assert fresh.session_id not in {s.id for s in engine.sessions(B)[1:]}
    await engine.close()


async def test_a_return_reopens_its_session_when_another_became_newest(engine: Engine) -> None:
    a = await engine.open(A)
    await say(engine, "GOAL one")
    await engine.switch_provider(B)
    await say(engine, "on b")
    engine.catalog.opened(A, "zz-later", str(engine.cwd), None)  # another run's session
    engine.catalog.turn_ended(A, "zz-later", "elsewhere", "ok", [])
    assert engine.sessions(A)[0].id == "zz-later"
    back = await engine.switch_provider(A)
    assert back.session_id == a.session_id and back.how == "resumed"
    sent = await say(engine, "next")
    assert "You are back in this session" in sent and "on b" in sent
    assert "GOAL one" not in sent  # A has its own turns
    await engine.close()


class _Broken(FakeBridge):
    """An agent that exits before it answers."""

    async def start(self) -> None:
        from avatar.core.errors import ProviderError

        raise ProviderError("broken-agent exited with status 1 before it answered")


async def test_a_failed_switch_leaves_the_session_that_was_open(engine: Engine) -> None:
    engine.registry.add(ProviderSpec(name="broken", transport="acp", bridge=f"{__name__}:_Broken"))
    seen: list[BaseEvent] = []
    a = await engine.open(A)
    await say(engine, "GOAL one")
    engine.subscribe(seen.append)
    with pytest.raises(AvatarError) as failed:
        await engine.switch_provider("broken")
    assert str(failed.value) == (
        "could not switch to broken (broken-agent exited with status 1 before it answered); "
        f"still on {A} session {a.session_id}"
    )
    assert engine.current is not None and engine.current.session_id == a.session_id
    assert await say(engine, "still here?") == "still here?"  # no handoff, no new session
    assert FakeBridge.started[-1].session_id == a.session_id
    assert [s.id for s in engine.sessions(A)] == [a.session_id]
    assert not [e for e in seen if isinstance(e, Notice)]  # nothing "had stopped"
    await engine.close()


async def test_provider_on_the_provider_already_open_opens_nothing(engine: Engine) -> None:
    seen: list[BaseEvent] = []
    engine.subscribe(seen.append)
    a = await engine.open(A)
    await say(engine, "GOAL one")
    agents = len(FakeBridge.started)
    same = await engine.switch_provider(A)
    assert same.session_id == a.session_id and len(FakeBridge.started) == agents
    assert await say(engine, "plain") == "plain"  # nothing handed over
    notices = [e.message for e in seen if isinstance(e, Notice)]
    assert notices == [f"already on {A} (session {a.session_id})"]
    assert len(engine.sessions(A)) == 1
    await engine.close()


async def test_a_session_the_agent_cannot_reopen_opens_seeded_from_avatars_copy(
    tmp_path: Path,
) -> None:
    def fresh_engine() -> Engine:
        e = Engine(Settings(), tmp_path, env={"PATH": "/x", "HOME": str(tmp_path)}, home=tmp_path)
        e.registry.add(ProviderSpec(name="plain", transport="acp", bridge=FAKE))
        return e

    engine = fresh_engine()
    lost = await engine.open("plain")
    await say(engine, "GOAL remember OSPREY")
    await say(engine, "and FALCON")
    await engine.close()

    engine = fresh_engine()
    seen: list[BaseEvent] = []
    engine.subscribe(seen.append)
    started = await engine.agent.resume(lost.session_id)
    assert started.session_id != lost.session_id and started.how == "new"
    notices = [e.message for e in seen if isinstance(e, Notice)]
    assert any("opens with its 4 earlier messages" in n for n in notices), notices
    sent = await say(engine, "what were the birds?")
    assert "GOAL remember OSPREY" in sent and "and FALCON" in sent
    parent = engine.library.lineage()[f"plain/{started.session_id}"].parent
    assert parent == f"plain/{lost.session_id}"
    await engine.close()


class _GoneStore:
    """A provider store whose files were deleted: it lists and knows nothing."""

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def list(self, cwd: Path | None) -> list[object]:
        return []

    def find(self, prefix: str) -> list[object]:
        return []

    def transcript(self, session_id: str) -> object:
        from avatar.core.errors import SessionNotFoundError

        raise SessionNotFoundError(session_id)


async def test_show_falls_back_to_avatars_copy_when_the_file_is_gone(engine: Engine) -> None:
    started = await engine.open(A)
    await say(engine, "keep this turn")
    await engine.close()
    engine.registry.add(ProviderSpec(name=A, transport="acp", bridge=FAKE, store="gone:Store"))
    engine.catalog.use_store(A, _GoneStore())  # type: ignore[arg-type]
    info = engine.find(started.session_id[:6])
    assert info.id == started.session_id
    texts = [m.text for m in engine.transcript(info).messages]
    assert texts == ["keep this turn", "echo: keep this turn"]


async def test_avatars_copy_of_the_turns_holds_no_secret(engine: Engine, tmp_path: Path) -> None:
    started = await engine.open(A)
    await say(engine, "deploy with sk-abcdefghijklmnopqrstuvwx please")
    await engine.close()
    copy = tmp_path / "records" / "turns" / A / f"{started.session_id}.jsonl"
    text = copy.read_text()
    assert "deploy with [redacted] please" in text and "sk-abc" not in text


async def test_avatars_copy_records_the_model_that_answered(engine: Engine, tmp_path: Path) -> None:
    engine.models.use(engine.chosen_provider(), "model-asked-for")
    started = await engine.open(A)
    FakeBridge.started[-1].answering_model = "model-that-answered"
    await say(engine, "which model are you?")
    await engine.close()
    copy = tmp_path / "records" / "turns" / A / f"{started.session_id}.jsonl"
    answer = json.loads(copy.read_text().splitlines()[-1])
    assert answer["role"] == "assistant" and answer["model"] == "model-that-answered"


async def test_the_replayed_history_is_handed_over_when_nothing_else_has_it(
    engine: Engine,
) -> None:
    engine.registry.add(
        ProviderSpec(
            name="replayer", transport="acp", bridge="tests.core.replay_bridge:ReplayBridge"
        )
    )
    await engine.agent.open_on("replayer", OpenRequest("resume", "ext-session-1"))
    await say(engine, "third step")  # avatar's copy of this session begins here
    await engine.switch_provider(B)
    sent = await say(engine, "carry on")
    assert "## Goal\nGOAL tune the cache" in sent
    assert "USER: now the eviction too" in sent and "ASSISTANT: Tuned it." in sent
    assert "USER: third step" in sent
    await engine.close()


def test_the_copy_keeps_tool_status_and_usage(tmp_path: Path) -> None:
    from avatar.core.events import ToolCallFinished, ToolCallStarted, TurnFinished, Usage
    from avatar.engine.conversation import LiveTranscript
    from avatar.handoff import build_handoff
    from avatar.sessions.records import SessionRecords
    from avatar.sessions.types import SessionInfo

    live = LiveTranscript(SessionInfo("s-1", "codex"))
    live.prompt("fix the app")
    for event in (
        ToolCallStarted(id="t1", name="edit", title="Edit src/app.py"),
        ToolCallFinished(id="t1", is_error=True),
        Usage(input_tokens=12, output_tokens=3),
        TurnFinished(),
    ):
        live.observe(event)
    answer, tools, extra = live.last_turn()
    assert (answer, tools) == ("", ["Edit src/app.py"])
    usage = {"input_tokens": 12, "output_tokens": 3, "tokens": 15}  # (tokens: the turn's count)
    assert extra == {"tool_status": ["failed"], "usage": usage}

    records = SessionRecords(tmp_path)
    records.turn("codex", "s-1", "fix the app", answer, tools, extra)
    line = (tmp_path / "records" / "turns" / "codex" / "s-1.jsonl").read_text().splitlines()[-1]
    assert '"tool_status": ["failed"]' in line and '"input_tokens": 12' in line
    seen = live.transcript()
    assert seen is not None and "## Files changed\n- src/app.py" in build_handoff(seen)


async def test_summarize_puts_the_left_agent_s_own_summary_on_top(engine: Engine) -> None:
    await engine.open(A)
    await say(engine, "GOAL build the lexer")
    seen: list[BaseEvent] = []
    engine.subscribe(seen.append)
    await engine.switch_provider(B, summarize=True)
    asked = FakeBridge.prompts[-1]
    assert asked.startswith("Another agent is taking over this work now.")  # asked on A
    first_on_b = await say(engine, "carry on")
    # (the fake agent answers with the last 20 characters of what it was asked)
    summary = first_on_b.index(f"## Summary by {A}, in its own words\necho: {asked[-20:]}")
    assert summary < first_on_b.index("## Goal\nGOAL build the lexer")
    notices = [e.message for e in seen if isinstance(e, Notice)]
    assert notices[0] == f"asking {A} for a summary to hand over"
    assert re.search(r"~\d+ tokens, a summary, the goal", notices[-1])


async def test_a_handoff_names_its_source_by_the_name_it_was_given(engine: Engine) -> None:
    """`/rename` (or `session rename`) gives a session a name: an export is headed by it, and
    the handoff's header names the session by it, on a switch made after the rename in the
    same run and on `--from`."""
    a = await engine.open(A)
    await say(engine, "GOAL build the lexer")
    engine.rename(a.session_id, "Lexer work")
    assert engine.export(a.session_id, "md").startswith("# Lexer work\n")
    await engine.switch_provider(B)
    sent = await say(engine, "go on")
    assert f"from {A} session {a.session_id}, 'Lexer work' ===" in sent
    await engine.agent.new(B)
    await engine.close()

    seeded = await engine.open(B, source=a.session_id)
    assert seeded.session_id != a.session_id
    sent = await say(engine, "and again")
    assert f"from {A} session {a.session_id}, 'Lexer work' ===" in sent
    await engine.close()
