"""Sessions kept loaded after their last client (`avatar.server.kept`), on the fake agent: a
resume that follows joins the session where it runs (no `session/load`), `avatar ps` lists it
without clients meanwhile, it closes `server.keep_sessions` seconds after its last client, and
one that changed elsewhere meanwhile (another process ran a turn on it) is opened anew."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from avatar.server.hub import OpenOptions
from avatar.server.kept import MOST_KEPT
from tests.server.test_hub import _agents, _hub


def _requests(state: Path, method: str) -> int:
    """How many `method` requests the fake agents of `state` were sent."""
    lines = (state / "requests.jsonl").read_text().splitlines()
    return sum(json.loads(line)["method"] == method for line in lines)


async def test_a_resume_after_the_last_client_joins_the_session_where_it_runs(
    tmp_path: Path,
) -> None:
    hub = _hub(tmp_path, keep=300, load=True)
    hub.keep_warm = False
    options = OpenOptions(cwd=tmp_path / "work", provider="fake")
    state = tmp_path / "state"
    try:
        first = await hub.open(options, client="chat-1")
        assert (await first.prompt("one", "chat-1"))["exit"] == 0
        sid = first.session_id
        first.detach("chat-1")
        await asyncio.sleep(0.05)
        assert [(i.session_id, i.clients) for i in hub.live()] == [(sid, [])]
        for n in (2, 3, 4):  # follow-ups, back to back
            again = await hub.open(options, client=f"chat-{n}", resume=sid)
            assert again is first  # the same live session, on the same agent
            ended = await again.prompt(f"turn {n}", f"chat-{n}")
            assert ended["exit"] == 0
            again.detach(f"chat-{n}")
        assert _requests(state, "session/load") == 0  # never loaded again
        assert _requests(state, "initialize") == 1

        # Another process runs a turn on it meanwhile (a REPL, say): the next resume does not
        # join the session as it was, it opens it anew, with that turn.
        other = hub.make_engine(options)
        await other.open(resume=sid)
        async for _ in other.send("elsewhere"):
            pass
        await other.close()
        reopened = await hub.open(options, client="chat-5", resume=sid)
        assert reopened is not first
        events: list[str] = []
        async for event in reopened.engine.send("after"):
            events.append(getattr(event, "text", ""))
        assert "(history 10)" in "".join(events)  # 4 turns here and 1 elsewhere before it
        reopened.detach("chat-5")
    finally:
        await hub.close()
    assert await _agents(state, 0) == []


async def test_a_kept_session_closes_when_its_time_is_up(tmp_path: Path) -> None:
    hub = _hub(tmp_path, keep=0.5)
    hub.keep_warm = False
    state = tmp_path / "state"
    try:
        live = await hub.open(OpenOptions(cwd=tmp_path / "work", provider="fake"), client="a")
        assert (await live.prompt("one", "a"))["exit"] == 0
        live.detach("a")
        await asyncio.sleep(0.1)
        assert [i.clients for i in hub.live()] == [[]]  # kept
        assert len(await _agents(state, 1)) == 1
        await asyncio.sleep(1.0)
        assert hub.live() == []  # closed, its agent stopped
        assert await _agents(state, 0) == []
    finally:
        await hub.close()


async def test_only_so_many_sessions_are_kept_the_longest_kept_closing_first(
    tmp_path: Path,
) -> None:
    hub = _hub(tmp_path, keep=300)
    hub.keep_warm = False
    options = OpenOptions(cwd=tmp_path / "work", provider="fake")
    try:
        ids = []
        for n in range(MOST_KEPT + 2):
            live = await hub.open(options, client=f"chat-{n}")
            assert (await live.prompt("one", f"chat-{n}"))["exit"] == 0
            ids.append(live.session_id)
            live.detach(f"chat-{n}")
        await asyncio.sleep(0.1)
        assert [i.session_id for i in hub.live()] == ids[2:]
    finally:
        await hub.close()
