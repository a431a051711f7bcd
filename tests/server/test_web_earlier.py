"""What a chat page shows above a live session's events (`before_live`), on the fake ACP
agent: the session's conversation before it went live, cut where the live session's own
turns begin (they come on the page's event stream), with a prompt said again found as the
live turn it is, the running turn left out, stored or not, and after a switch the conversation
of the session it went live on; nothing for a new session."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from avatar.core.config import parse_settings
from avatar.engine.engine import Engine
from avatar.server.hub import Hub, LiveSession, OpenOptions
from avatar.server.web.earlier import before_live
from tests.support.acp_agent import provider_entry
from tests.support.served import collect


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[Hub]:
    settings = parse_settings(
        {
            "providers": {
                "fake": provider_entry(
                    tmp_path / "state", chunk_delay=0.05, permission=False, load=True
                ),
                "other": provider_entry(tmp_path / "other-state", permission=False),
            },
            "provider": "fake",
            "server": {"keep_sessions": 0},  # (a session resumed here is not live any more)
        }
    )
    (tmp_path / "work").mkdir()

    def make(options: OpenOptions) -> Engine:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
        return Engine(settings, options.cwd, home=tmp_path / "home", env=env)

    made = Hub(make, keep_warm=False)
    yield made
    await made.close()


def _said(live: LiveSession) -> list[str]:
    earlier = before_live(live)
    return [m.text for m in earlier.messages if m.role == "user"] if earlier else []


async def test_the_conversation_before_the_live_session_once(hub: Hub, tmp_path: Path) -> None:
    options = OpenOptions(cwd=tmp_path / "work")
    first = await hub.open(options, client="a", on_events=lambda s: collect(s, []))
    assert _said(first) == []  # a new session: nothing earlier
    for prompt in ("remember the heron", "and the ibis"):
        ended = await first.prompt(prompt, "a")
        assert ended["exit"] == 0, ended
    sid = first.session_id
    first.detach("a")
    await asyncio.sleep(0.2)
    assert hub.get(sid) is None  # no longer live

    live = await hub.open(options, client="b", resume=sid, on_events=lambda s: collect(s, []))
    assert _said(live) == ["remember the heron", "and the ibis"]
    # A turn of the live session, said again: it is the live turn, not an earlier one.
    assert (await live.prompt("and the ibis", "b"))["exit"] == 0
    assert _said(live) == ["remember the heron", "and the ibis"]
    running = asyncio.ensure_future(live.prompt("remember the heron", "b"))
    while live.running_client is None:
        await asyncio.sleep(0.01)
    assert _said(live) == ["remember the heron", "and the ibis"]
    await running
    assert _said(live) == ["remember the heron", "and the ibis"]

    # Switched away: still the conversation of the session it went live on.
    await live.switch("other", client="b")
    assert (await live.prompt("over to you", "b"))["exit"] == 0
    assert _said(live) == ["remember the heron", "and the ibis"]
    live.detach("b")
