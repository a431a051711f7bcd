"""ClaudeBridge opening sessions: new, resume, continue, fork, the session the engine resolved."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from avatar.bridges.base import OpenRequest
from avatar.core.errors import SessionNotFoundError, UsageError
from avatar.core.events import Notice, SessionStarted, TextDelta
from tests.claude.conftest import FakeClaude, collect


def text(events: list) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_resume_continue_and_unknown_ids(fake: FakeClaude) -> None:
    first = fake.bridge()
    a = await first.open(OpenRequest("new"))
    await collect(first.send("one"))
    await first.stop()
    b_bridge = fake.bridge()
    b = await b_bridge.open(OpenRequest("new"))
    await collect(b_bridge.send("two"))
    await b_bridge.stop()

    bridge = fake.bridge()
    try:
        resumed = await bridge.open(fake.request("resume", a.session_id))
        assert (resumed.how, resumed.session_id) == ("resumed", a.session_id)
        assert (await fake.starts(3))[2]["argv"][-2:] == ["--resume", a.session_id]
        cont = await bridge.open(OpenRequest("continue"))
        assert (cont.how, cont.session_id) == ("continued", b.session_id)
        # The engine's store does not know this id (info=None): a new session, with a notice.
        missing = str(uuid.uuid4())
        fresh = await bridge.open(OpenRequest("resume", missing))
        assert fresh.how == "new" and fresh.session_id != missing
        assert any(isinstance(n, Notice) and missing in n.message for n in fake.notices)
    finally:
        await bridge.stop()


async def test_a_resolved_session_is_not_looked_up_again(fake: FakeClaude) -> None:
    first = fake.bridge()
    a = await first.open(OpenRequest("new"))
    await collect(first.send("one"))
    await first.stop()

    store = fake.store()
    info = store.locate(a.session_id)
    scans = store.scans
    bridge = fake.bridge(store=store)
    try:
        resumed = await bridge.open(OpenRequest.of("resume", info))
        forked = await bridge.open(OpenRequest.of("fork", info))
        await collect(bridge.send("in the fork"))
    finally:
        await bridge.stop()
    assert (resumed.how, forked.how) == ("resumed", "forked")
    assert store.scans == scans  # neither open walked the store again


async def test_without_a_store_no_session_is_on_disk(fake: FakeClaude) -> None:
    first = fake.bridge()
    a = await first.open(OpenRequest("new"))
    await collect(first.send("one"))
    await first.stop()

    bridge = fake.bridge(store=None)
    try:
        cont = await bridge.open(OpenRequest("continue"))
        assert cont.how == "new"
        resumed = await bridge.open(OpenRequest("resume", a.session_id))  # info=None
        assert resumed.how == "new" and resumed.session_id != a.session_id
        with pytest.raises(SessionNotFoundError):
            await bridge.open(OpenRequest("fork", a.session_id))
        assert text(await collect(bridge.send("still works"))) == "Hello from fake claude."
    finally:
        await bridge.stop()
    notices = [n.message for n in fake.notices if isinstance(n, Notice)]
    assert any("no earlier claude session" in m for m in notices)


async def test_continue_without_sessions_opens_a_new_one(fake: FakeClaude) -> None:
    bridge = fake.bridge()
    started = await bridge.open(OpenRequest("continue"))
    await bridge.stop()
    assert started.how == "new"
    assert any(isinstance(n, Notice) for n in fake.notices)


async def test_explicit_session_ids(fake: FakeClaude) -> None:
    bridge = fake.bridge()
    chosen = str(uuid.uuid4())
    started = await bridge.open(OpenRequest("new", chosen))
    await collect(bridge.send("hi"))
    await bridge.stop()
    assert started.session_id == chosen
    with pytest.raises(UsageError, match="already exists"):
        await fake.bridge().open(OpenRequest("new", chosen))
    with pytest.raises(UsageError, match="UUID"):
        await fake.bridge().open(OpenRequest("new", "my-session"))


async def test_a_session_opened_without_a_turn_restarts_under_its_id(fake: FakeClaude) -> None:
    bridge = fake.bridge()
    started = await bridge.open(OpenRequest("new"))
    await bridge.stop()  # nothing on disk yet
    try:
        await collect(bridge.send("first words"))
    finally:
        await bridge.stop()
    argv = fake.events("start")[-1]["argv"]
    assert argv[-2:] == ["--session-id", started.session_id]

    fresh = fake.bridge()  # never opened: send() opens a new session and says so
    try:
        await collect(fresh.send("hello"))
    finally:
        await fresh.stop()
    assert any(isinstance(e, SessionStarted) and e.how == "new" for e in fake.notices)


async def test_fork_left_without_a_turn_is_written_on_stop(fake: FakeClaude) -> None:
    parent = fake.bridge()
    p = await parent.open(OpenRequest("new"))
    await collect(parent.send("remember 42"))
    await parent.stop()

    bridge = fake.bridge()
    forked = await bridge.open(fake.request("fork", p.session_id))
    assert forked.how == "forked" and forked.session_id != p.session_id
    argv = (await fake.starts(2))[1]["argv"]
    assert argv[-5:] == [
        "--resume",
        p.session_id,
        "--fork-session",
        "--session-id",
        forked.session_id,
    ]
    await bridge.stop()

    child = fake.project / f"{forked.session_id}.jsonl"
    entries = [json.loads(x) for x in child.read_text().splitlines()]
    assert {e["sessionId"] for e in entries} == {forked.session_id}
    assert entries[0]["message"]["content"] == "remember 42"
    parent_file = fake.project / f"{p.session_id}.jsonl"
    assert {json.loads(x)["sessionId"] for x in parent_file.read_text().splitlines()} == {
        p.session_id
    }
    t = fake.store().transcript(forked.session_id)
    assert [m.text for m in t.messages][:1] == ["remember 42"]


async def test_a_fork_left_for_another_session_is_written_too(fake: FakeClaude) -> None:
    parent = fake.bridge()
    p = await parent.open(OpenRequest("new"))
    await collect(parent.send("remember 42"))
    await parent.stop()
    bridge = fake.bridge()
    try:
        forked = await bridge.open(fake.request("fork", p.session_id))
        await bridge.open(OpenRequest("new"))
    finally:
        await bridge.stop()
    assert (fake.project / f"{forked.session_id}.jsonl").is_file()


async def test_fork_with_a_turn_is_written_by_claude(fake: FakeClaude) -> None:
    parent = fake.bridge()
    p = await parent.open(OpenRequest("new"))
    await collect(parent.send("remember 42"))
    await parent.stop()
    bridge = fake.bridge()
    forked = await bridge.open(fake.request("fork", p.session_id))
    await collect(bridge.send("child turn"))
    await bridge.stop()
    texts = [m.text for m in fake.store().transcript(forked.session_id).messages]
    assert texts[0] == "remember 42" and "child turn" in texts
    with pytest.raises(SessionNotFoundError):
        await fake.bridge().open(OpenRequest("fork", str(uuid.uuid4())))


async def test_a_fork_claude_wrote_before_dying_is_resumed_not_forked_again(
    fake: FakeClaude,
) -> None:
    parent = fake.bridge()
    p = await parent.open(OpenRequest("new"))
    await collect(parent.send("remember 42"))
    await parent.stop()
    bridge = fake.bridge()
    try:
        forked = await bridge.open(fake.request("fork", p.session_id))
        died = await collect(bridge.send("CRASH in the first turn"))  # written, then dead
        assert died[-1].type == "error"
        assert text(await collect(bridge.send("still the fork?"))) == "Hello from fake claude."
    finally:
        await bridge.stop()
    restart = (await fake.starts(3))[2]["argv"]
    assert restart[-2:] == ["--resume", forked.session_id] and "--fork-session" not in restart
    texts = [m.text for m in fake.store().transcript(forked.session_id).messages]
    assert texts[0] == "remember 42" and texts[-2:] == [
        "still the fork?",
        "Hello from fake claude.",
    ]


async def test_resume_runs_in_the_sessions_own_directory(fake: FakeClaude, tmp_path: Path) -> None:
    other = tmp_path / "other-project"
    other.mkdir()
    first = fake.bridge(cwd=other)
    s = await first.open(OpenRequest("new"))
    await collect(first.send("made elsewhere"))
    await first.stop()
    bridge = fake.bridge()  # cwd: fake.cwd
    resumed = await bridge.open(fake.request("resume", s.session_id))
    assert bridge.cwd == other
    await collect(bridge.send("again"))
    await bridge.stop()
    assert resumed.cwd == str(other)
    assert fake.events("start")[-1]["cwd"] == str(other)
    assert any(isinstance(n, Notice) and str(other) in n.message for n in fake.notices)
