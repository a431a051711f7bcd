"""The hub's live sessions (docs/design.md §11), on the fake ACP agent: prompts of several clients
queue in order, every client sees every event (a late one gets the history first), a
permission question reaches every client that can answer and the first answer wins, a session
nobody can answer for denies as `chat` does, and a resume of a live session joins it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from avatar.core.config import parse_settings
from avatar.core.errors import UsageError
from avatar.engine.engine import Engine
from avatar.server.hub import Event, Hub, OpenOptions
from avatar.server.warm import WarmAgents
from tests.support.acp_agent import provider_entry
from tests.support.served import collect, processes_with


def _hub(tmp_path: Path, entry: dict[str, Any] | None = None, keep: float = 0, **agent: Any) -> Hub:
    """A hub on the fake agent (`agent`: its behaviours; `entry`: keys of its provider entry;
    `keep`: `server.keep_sessions`, here 0 unless a test keeps sessions)."""
    fake = {**provider_entry(tmp_path / "state", **agent), **(entry or {})}
    settings = parse_settings(
        {"providers": {"fake": fake}, "provider": "fake", "server": {"keep_sessions": keep}}
    )
    (tmp_path / "work").mkdir(exist_ok=True)

    def make(options: OpenOptions, **env: str) -> Engine:
        return Engine(
            settings,
            options.cwd,
            provider=options.provider,
            home=tmp_path / "home",
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env},
        )

    return Hub(make)


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[Hub]:
    made = _hub(tmp_path, chunk_delay=0.05, permission=False)
    yield made
    await made.close()


def _answers(events: list[Event]) -> list[str]:
    """The answer text of each turn, in the order the turns ran."""
    texts: list[str] = []
    for event in events:
        if event["type"] == "turn_started":
            texts.append("")
        elif event["type"] == "text" and not event["replay"]:
            texts[-1] += event["text"]
    return texts


async def test_prompts_from_several_clients_queue_in_order_and_all_see_every_event(
    hub: Hub, tmp_path: Path
) -> None:
    seen: dict[str, list[Event]] = {"a": [], "b": []}
    tasks: list[asyncio.Task[None]] = []
    options = OpenOptions(cwd=tmp_path / "work", provider="fake")
    live = await hub.open(
        options, client="a", on_events=lambda s: tasks.append(collect(s, seen["a"]))
    )
    joined = await hub.open(
        options,
        client="b",
        resume=live.session_id,
        on_events=lambda s: tasks.append(collect(s, seen["b"])),
    )
    assert joined is live  # a resume of a live session joins it
    ends = await asyncio.gather(
        live.prompt("one", "a"), live.prompt("two", "b"), live.prompt("three", "a")
    )
    assert [e["turn"] for e in ends] == [1, 2, 3] and {e["exit"] for e in ends} == {0}
    await asyncio.sleep(0.05)
    for client in ("a", "b"):
        answers = _answers(seen[client])
        assert [a.split(" to ")[1].split(" (")[0] for a in answers] == ["'one'", "'two'", "'three'"]
        # each turn saw the ones before it: they ran one after the other on one session
        assert [a.split("(history ")[1] for a in answers] == ["0)", "2)", "4)"]
    assert seen["a"] == seen["b"]
    late: list[Event] = []
    tasks.append(collect(live.subscribe("c"), late))
    await asyncio.sleep(0.05)
    assert late == seen["a"]  # a late client sees the history first
    assert [i.clients for i in hub.live()] == [["a", "b", "c"]]
    for client in ("a", "b", "c"):
        live.detach(client)
    await asyncio.gather(*tasks)
    await asyncio.sleep(0.05)
    assert hub.live() == []  # the last client gone, the session closed


async def test_a_permission_question_reaches_every_client_and_the_first_answer_wins(
    tmp_path: Path,
) -> None:
    hub = _hub(tmp_path, permission=True)
    seen: dict[str, list[Event]] = {"a": [], "b": []}
    tasks: list[asyncio.Task[None]] = []
    options = OpenOptions(cwd=tmp_path / "work", provider="fake")
    try:
        live = await hub.open(options, client="a", answers=True)
        tasks.append(collect(live.subscribe("a", answers=True), seen["a"]))
        tasks.append(collect(live.subscribe("b", answers=True), seen["b"]))
        turn = asyncio.ensure_future(live.prompt("risky", "a"))
        for _ in range(200):
            if live.state == "permission":
                break
            await asyncio.sleep(0.02)
        assert [i.state for i in hub.live()] == ["permission"]
        await asyncio.sleep(0.02)
        for client in ("a", "b"):
            asked = [e for e in seen[client] if e["type"] == "permission_asked"]
            assert len(asked) == 1
        request = asked[0]["id"]
        assert live.answer(request, "allow", "b")
        assert not live.answer(request, "deny", "a")  # answered already: the first wins
        ended = await turn
        assert ended["exit"] == 0
        await asyncio.sleep(0.05)
        for client in ("a", "b"):
            said = [e for e in seen[client] if e["type"] == "permission_answered"]
            assert [(e["answer"], e["client"]) for e in said] == [("allow", "b")]
            assert "[permission: yes]" in _answers(seen[client])[0]
        assert seen["a"] == seen["b"]
        assert [i.state for i in hub.live()] == ["idle"]
    finally:
        await hub.close()
        for task in tasks:
            await task


async def test_nobody_to_answer_denies_as_chat_does(tmp_path: Path) -> None:
    hub = _hub(tmp_path, permission=True)
    events: list[Event] = []
    tasks: list[asyncio.Task[None]] = []
    try:
        live = await hub.open(
            OpenOptions(cwd=tmp_path / "work", provider="fake"),
            client="chat",
            on_events=lambda s: tasks.append(collect(s, events)),
        )
        ended = await asyncio.wait_for(live.prompt("risky", "chat"), 30)
        assert ended["exit"] == 0
        await asyncio.sleep(0.05)
        assert "[permission: no]" in _answers(events)[0]
        notices = [e["message"] for e in events if e["type"] == "notice"]
        assert any("nobody can answer a permission prompt here" in n for n in notices)
    finally:
        await hub.close()
        for task in tasks:
            await task


async def _agents(state: Path, count: int, gone: int = 0) -> list[int]:
    """The fake agents running on `state`, once there are `count` of them (and `gone` is not
    one of them)."""
    for _ in range(300):
        found = processes_with(str(state))
        if len(found) == count and gone not in found:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"{processes_with(str(state))} fake agents, not {count}")


async def test_the_next_session_runs_on_an_agent_started_before_it_and_a_new_config_gets_its_own(
    tmp_path: Path,
) -> None:
    hub = _hub(tmp_path)
    hub.warm = WarmAgents(others_kept=1.0)
    options = OpenOptions(cwd=tmp_path / "work", provider="fake")
    state = tmp_path / "state"
    try:
        first = await hub.open(options, client="a")
        assert (await first.prompt("one", "a"))["exit"] == 0
        mine = first.engine.status().facts["pid"]
        first.detach("a")  # its session closes (its agent stops); the warm agent stays
        [warm] = await _agents(state, 1, gone=mine)
        second = await hub.open(options, client="b")
        assert second.engine.status().facts["pid"] == warm  # started before it was asked for
        assert (await second.prompt("two", "b"))["exit"] == 0
        second.detach("b")
        [next_warm] = await _agents(state, 1, gone=warm)
        # Another config (here: the permission policy) is another key: a new agent. The one
        # kept warm for the old config is left alone, until it has gone unused for a while
        # (here a second) while a newer key of its provider and project is kept.
        changed = hub.make_engine(options)
        changed.settings = replace(changed.settings, permission="allow")
        third = await hub.open(options, client="c", engine=changed)
        assert third.engine.status().facts["pid"] != next_warm
        assert (await third.prompt("three", "c"))["exit"] == 0
        third.detach("c")
        kept = await _agents(state, 1, gone=next_warm)  # the new config's next warm agent
        assert len(kept) == 1
    finally:
        await hub.close()
    assert await _agents(state, 0) == []


async def test_a_session_without_trust_never_gets_the_agent_warmed_under_trust(
    tmp_path: Path,
) -> None:
    """An agent started under `--trust` starts with the project's own agent config whatever
    its trust (`avatar.bridges.held_back`): the next session of a client without `--trust`
    gets an agent of its own."""
    hub = _hub(tmp_path)
    options = OpenOptions(cwd=tmp_path / "work", provider="fake")
    state = tmp_path / "state"
    try:
        trusting = hub.make_engine(options)
        trusting.trust = True
        first = await hub.open(options, client="a", engine=trusting)
        assert (await first.prompt("one", "a"))["exit"] == 0
        mine = first.engine.status().facts["pid"]
        first.detach("a")
        [warm] = await _agents(state, 1, gone=mine)
        second = await hub.open(options, client="b")
        assert second.engine.status().facts["pid"] != warm
        assert not second.engine.trust
        second.detach("b")
    finally:
        await hub.close()
    assert await _agents(state, 0) == []


async def test_continue_joins_the_newest_session_when_it_is_live(tmp_path: Path) -> None:
    hub = _hub(tmp_path, chunk_delay=0.05)
    options = OpenOptions(cwd=tmp_path / "work", provider="fake")
    events: list[Event] = []
    tasks: list[asyncio.Task[None]] = []
    try:
        live = await hub.open(
            options, client="a", on_events=lambda s: tasks.append(collect(s, events))
        )
        assert (await live.prompt("one", "a"))["exit"] == 0
        # (alone, a second engine on the same session would wait for the first one's lock)
        joined = await asyncio.wait_for(hub.open(options, client="b", continue_last=True), 20)
        assert joined is live
        assert [i.session_id for i in hub.live()] == [live.session_id]
    finally:
        await hub.close()
        for task in tasks:
            await task


async def test_a_client_naming_another_agent_is_refused_a_session_in_use(
    hub: Hub, tmp_path: Path
) -> None:
    """A live session that is not merely kept is not joined by one asking for it on another
    agent (`-p native`), nor taken from whoever holds it: the asker is told whose it is."""
    live = await hub.open(OpenOptions(cwd=tmp_path / "work", provider="fake"), client="a")
    other = OpenOptions(cwd=tmp_path / "work", provider="native")
    said = f"session {live.session_id} is live in the server on fake, not native"
    with pytest.raises(UsageError, match=said):
        await hub.open(other, client="b", resume=live.session_id)
    assert not live.closed and [i.session_id for i in hub.live()] == [live.session_id]


async def test_an_attach_mid_turn_gets_the_running_turn_once(hub: Hub, tmp_path: Path) -> None:
    seen: list[Event] = []
    live = await hub.open(
        OpenOptions(cwd=tmp_path / "work", provider="fake"),
        client="a",
        on_events=lambda s: collect(s, seen),
    )
    await live.prompt("first question", "a")
    running = asyncio.ensure_future(live.prompt("second question", "a"))
    while live.running_client is None:
        await asyncio.sleep(0.01)
    # What attach sends as the history ends before the running turn, whose prompt and events
    # the attached client gets from the turn's start (`subscribe(since_turn=True)`).
    history, events = await live.join("late")
    said = [m["text"] for m in history if m["role"] == "user"]
    first = await anext(events)
    live.detach("late")
    await running
    assert said == ["first question"]
    assert (first["type"], first["prompt"]) == ("turn_started", "second question")


def _client_engine(hub: Hub, tmp_path: Path, **env: str) -> Engine:
    """The engine of a client whose environment is the hub's plus `env`."""
    make: Any = hub.make_engine  # (`_hub`'s, which takes the client's variables)
    made: Engine = make(OpenOptions(cwd=tmp_path / "work", provider="fake"), **env)
    return made


async def test_warm_agents_are_keyed_on_what_changes_the_agent_and_a_miss_stops_no_other(
    tmp_path: Path,
) -> None:
    """A terminal of another width runs on the warm agent; a client with another value of a
    variable the provider declares (its login key) gets an agent of its own, and the warm
    agent of the first key runs on: the next client of that key gets it."""
    hub = _hub(tmp_path, entry={"login_env": ["FAKE_KEY"]})
    options = OpenOptions(cwd=tmp_path / "work", provider="fake")
    state = tmp_path / "state"
    try:
        first = await hub.open(
            options, client="a", engine=_client_engine(hub, tmp_path, COLUMNS="80", TERM="xterm")
        )
        assert (await first.prompt("one", "a"))["exit"] == 0
        mine = first.engine.status().facts["pid"]
        first.detach("a")
        [warm] = await _agents(state, 1, gone=mine)
        wide = _client_engine(hub, tmp_path, COLUMNS="211", TERM="tmux-256color", LINES="60")
        second = await hub.open(options, client="b", engine=wide)
        assert second.engine.status().facts["pid"] == warm  # the same agent, started before
        assert (await second.prompt("two", "b"))["exit"] == 0
        second.detach("b")
        [kept] = await _agents(state, 1, gone=warm)
        other = await hub.open(
            options, client="c", engine=_client_engine(hub, tmp_path, FAKE_KEY="another")
        )
        assert other.engine.status().facts["pid"] not in (warm, kept)
        assert (await other.prompt("three", "c"))["exit"] == 0
        other.detach("c")
        await asyncio.sleep(0.5)  # (what a miss once did to the other key's agent, it did now)
        again = await hub.open(options, client="d", engine=_client_engine(hub, tmp_path))
        assert again.engine.status().facts["pid"] == kept  # still running, still warm
        again.detach("d")
    finally:
        await hub.close()
    assert await _agents(state, 0) == []
