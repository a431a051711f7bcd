"""Several sessions on running ACP agents (`avatar.bridges.acp.shared`), on the fake agent with
the `shared_process` quirk: the next session of a project opens on an agent that runs (no
agent started or initialized for it), on one no other session uses when there is one (at
most two agents of a launch), sessions side by side on one agent keep their answers and
their permission questions apart, an agent's death ends the turn of every session on it, and
the agents end with the server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from avatar.bridges.acp import shared
from avatar.server.hub import Event, Hub, OpenOptions
from tests.server.test_hub import _agents, _answers, _hub
from tests.support.served import collect

SHARED = {"quirks": ["shared_process"]}


def _requests(state: Path, method: str) -> int:
    """How many `method` requests the fake agents of `state` were sent."""
    lines = (state / "requests.jsonl").read_text().splitlines()
    return sum(json.loads(line)["method"] == method for line in lines)


async def test_back_to_back_sessions_open_on_the_agent_already_running(tmp_path: Path) -> None:
    hub = _hub(tmp_path, SHARED)
    options = OpenOptions(cwd=tmp_path / "work", provider="fake")
    state = tmp_path / "state"
    pids, sessions = [], []
    try:
        for client in ("a", "b", "c", "d", "e"):  # one after the other, without a pause
            live = await hub.open(options, client=client)
            assert (await live.prompt(f"from {client}", client))["exit"] == 0
            pids.append(live.engine.status().facts["pid"])
            sessions.append(live.session_id)
            live.detach(client)
        assert len(set(sessions)) == 5
        # Two agents ran them all, each initialized once: the next session was prepared on
        # the agent the current one did not run on (the warm one), and they took turns.
        assert len(set(pids)) == 2 and pids[1:] == pids[1:3] * 2
        assert _requests(state, "initialize") == 2
        assert sorted(await _agents(state, 2)) == sorted(set(pids))  # both kept for the next
    finally:
        await hub.close()
    assert await _agents(state, 0) == []  # they end with the server


async def test_a_new_session_opens_on_an_agent_no_session_uses(tmp_path: Path) -> None:
    """One agent does one thing at a time: a second session beside a first goes to a second
    agent (a third shares one), and a session after both left reuses one, started before."""
    hub = _hub(tmp_path, SHARED)
    hub.keep_warm = False
    options = OpenOptions(cwd=tmp_path / "work", provider="fake")
    state = tmp_path / "state"
    try:
        held = [await hub.open(options, client=c) for c in ("a", "b", "c")]
        pids = [live.engine.status().facts["pid"] for live in held]
        assert pids[0] != pids[1] and pids[2] in pids[:2]
        for client, live in zip("abc", held, strict=True):
            live.detach(client)
        later = await hub.open(options, client="d")
        assert later.engine.status().facts["pid"] in pids[:2]
        assert _requests(state, "initialize") == 2
    finally:
        await hub.close()
    assert await _agents(state, 0) == []


async def _two_on_one(hub: Hub, tmp_path: Path, seen: dict[str, list[Event]]) -> list[Any]:
    """Two clients' sessions side by side on one agent, subscribed into `seen`; their live
    sessions. (Three are opened: the second, "x", goes to an agent of its own, and the
    third shares the first's.)"""
    hub.keep_warm = False
    options = OpenOptions(cwd=tmp_path / "work", provider="fake")
    made = []
    for client in ("a", "x", "b"):
        live = await hub.open(options, client=client, answers=True)
        if client != "x":
            collect(live.subscribe(client, answers=True), seen[client])
            made.append(live)
    return made


async def test_sessions_side_by_side_on_one_agent_keep_answers_and_questions_apart(
    tmp_path: Path,
) -> None:
    hub = _hub(tmp_path, SHARED, chunk_delay=0.05, chunks=6, permission=True)
    seen: dict[str, list[Event]] = {"a": [], "b": []}
    try:
        a, b = await _two_on_one(hub, tmp_path, seen)
        assert a.engine.status().facts["pid"] == b.engine.status().facts["pid"]
        turns = [
            asyncio.ensure_future(a.prompt("alpha", "a")),
            asyncio.ensure_future(b.prompt("beta", "b")),
        ]
        answered: dict[str, str] = {}
        for _ in range(400):  # each question to its own session's client only; a allows, b denies
            for client, live, answer in (("a", a, "allow"), ("b", b, "deny")):
                asked = [e for e in seen[client] if e["type"] == "permission_asked"]
                if asked and client not in answered:
                    answered[client] = asked[0]["id"]
                    assert live.answer(asked[0]["id"], answer, client)
            if len(answered) == 2:
                break
            await asyncio.sleep(0.02)
        ends = await asyncio.gather(*turns)
        assert [e["exit"] for e in ends] == [0, 0]
        await asyncio.sleep(0.05)
        assert _answers(seen["a"]) == ["reply 1 to 'alpha' (history 0) [permission: yes]"]
        assert _answers(seen["b"]) == ["reply 1 to 'beta' (history 0) [permission: no]"]
        for client in ("a", "b"):
            assert len([e for e in seen[client] if e["type"] == "permission_asked"]) == 1
    finally:
        await hub.close()


async def test_a_call_about_no_session_of_ours_is_refused(tmp_path: Path) -> None:
    # The agent reads a file in its session's project, naming its own session, then another.
    for about, said in ((None, "read ok: the notes"), ("not-ours", "no session not-ours here")):
        root = tmp_path / str(about)
        (root / "work").mkdir(parents=True)
        (root / "work" / "notes.txt").write_text("the notes\n")
        hub = _hub(root, SHARED, fs_read="notes.txt", fs_read_as=about)
        seen: list[Event] = []
        try:
            live = await hub.open(OpenOptions(cwd=root / "work", provider="fake"), client="a")
            collect(live.subscribe("a", answers=True), seen)
            assert (await live.prompt("read it", "a"))["exit"] == 0
            await asyncio.sleep(0.05)
            [answer] = _answers(seen)
            assert said in answer, answer
            assert ("read refused" in answer) is (about is not None)
        finally:
            await hub.close()


async def test_an_agents_death_ends_the_turn_of_every_session_on_it(tmp_path: Path) -> None:
    hub = _hub(tmp_path, SHARED, chunk_delay=0.2, chunks=20)
    seen: dict[str, list[Event]] = {"a": [], "b": []}
    state = tmp_path / "state"
    try:
        a, b = await _two_on_one(hub, tmp_path, seen)
        pid = a.engine.status().facts["pid"]
        turns = [
            asyncio.ensure_future(a.prompt("alpha", "a")),
            asyncio.ensure_future(b.prompt("beta", "b")),
        ]
        while not all(any(e["type"] == "text" for e in seen[c]) for c in ("a", "b")):
            await asyncio.sleep(0.02)
        os.kill(pid, signal.SIGKILL)
        ends = await asyncio.wait_for(asyncio.gather(*turns), 30)
        for client, end in zip(("a", "b"), ends, strict=True):
            errors = [e for e in seen[client] if e["type"] == "error"]
            assert end["exit"] != 0 and errors, (end, seen[client])
        # Each session goes on: its next prompt restarts the agent and reopens it.
        again = await asyncio.wait_for(a.prompt("again", "a"), 30)
        assert again["exit"] == 0
        assert a.engine.status().facts["pid"] != pid
    finally:
        await hub.close()
    assert await _agents(state, 0) == []


async def test_an_agent_that_cannot_close_sessions_takes_only_so_many(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake agent has no `session/close`: what each session held stays in it, so after a
    number of sessions (here 2) the next one runs on a new agent."""
    monkeypatch.setattr(shared, "MOST_SESSIONS_UNCLOSED", 2)
    hub = _hub(tmp_path, SHARED)
    hub.keep_warm = False
    options = OpenOptions(cwd=tmp_path / "work", provider="fake")
    pids = []
    try:
        for client in ("a", "b", "c", "d", "e"):  # two agents take two each, then a third
            live = await hub.open(options, client=client)
            pids.append(live.engine.status().facts["pid"])
        assert pids[:4] == pids[:2] * 2 and pids[0] != pids[1]
        assert pids[4] not in pids[:4]
    finally:
        await hub.close()
