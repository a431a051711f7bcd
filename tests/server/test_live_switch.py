"""A provider switch of a live session (docs/design.md §11), on the fake ACP agent: every client is
told (`switched`: the new provider and session, the handoff the next prompt opens with, who
switched), a page's or a socket watcher's alike, after the new session's own `session` event;
a switch to where it is already tells nobody; a REPL attached through the socket shows it as a
line and follows the new provider."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from avatar.core.config import parse_settings
from avatar.core.events import BaseEvent, Notice
from avatar.engine.engine import Engine
from avatar.server.hub import Event, Hub, OpenOptions
from avatar.server.live import LiveSession
from avatar.server.remote import RemoteEngine
from tests.support.acp_agent import provider_entry
from tests.support.served import collect, hub_served


def _settings(tmp_path: Path) -> Any:
    return parse_settings(
        {
            "providers": {
                "fake": provider_entry(tmp_path / "state"),
                "other": provider_entry(tmp_path / "other-state"),
            },
            "provider": "fake",
        }
    )


def _engine(tmp_path: Path, cwd: Path, cls: type[Engine] = Engine) -> Engine:
    return cls(
        _settings(tmp_path),
        cwd,
        home=tmp_path / "home",
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[Hub]:
    (tmp_path / "work").mkdir()
    made = Hub(lambda options: _engine(tmp_path, options.cwd), keep_warm=False)
    yield made
    await made.close()


async def _until(predicate: Any, timeout: float = 20) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.02)


async def test_every_client_is_told_of_a_switch_with_its_handoff(hub: Hub, tmp_path: Path) -> None:
    seen: dict[str, list[Event]] = {"a": [], "b": []}
    live = await hub.open(
        OpenOptions(cwd=tmp_path / "work"),
        client="a",
        on_events=lambda s: collect(s, seen["a"]),
    )
    assert (await live.prompt("remember the heron", "a"))["exit"] == 0
    collect(live.subscribe("b", replay=False), seen["b"])  # one that came later
    left = live.session_id

    await live.switch("other", client="web")
    await _until(lambda: any(e["type"] == "switched" for e in seen["b"]))

    for events in seen.values():
        [switched] = [e for e in events if e["type"] == "switched"]
        assert switched["provider"] == "other" and switched["client"] == "web"
        assert switched["session_id"] == live.session_id != left
        assert "remember the heron" in switched["handoff"]
        assert switched["handoff"] == live.engine.status().handoff  # what the next prompt sends
        # after the new session's own event, which it does not repeat the opening of
        kinds = [e["type"] for e in events]
        opened = [i for i, e in enumerate(events) if e["type"] == "session"]
        assert opened and events[opened[-1]]["session_id"] == live.session_id
        assert opened[-1] < kinds.index("switched")

    # Already on it: nothing switched, nobody is told so (a notice says it).
    await live.switch("other", client="web")
    await asyncio.sleep(0.2)
    assert [e["type"] for e in seen["b"]].count("switched") == 1
    assert seen["b"][-1]["type"] == "notice" and "already on other" in seen["b"][-1]["message"]


@contextlib.asynccontextmanager
async def attached(
    hub: Hub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[RemoteEngine, LiveSession]]:
    """A live session that has had a turn, served on the socket, and an engine attached to it
    as a REPL is (`avatar attach`), detached afterwards."""
    remote = _engine(tmp_path, tmp_path / "work", RemoteEngine)
    assert isinstance(remote, RemoteEngine)
    async with hub_served(hub, tmp_path / "run", monkeypatch), contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(remote.close)
        live = await hub.open(
            OpenOptions(cwd=tmp_path / "work"),
            client="holder",  # (subscribed, so the session stays live after its turn)
            on_events=lambda s: collect(s, []),
        )
        assert (await live.prompt("remember the heron", "holder"))["exit"] == 0
        await remote.attach(live.session_id, "repl")
        yield remote, live


async def test_an_attached_repl_shows_a_switch_made_elsewhere(
    hub: Hub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with attached(hub, tmp_path, monkeypatch) as (remote, live):
        shown: list[BaseEvent] = []
        remote.subscribe(shown.append)
        remote.listen()
        await asyncio.sleep(0.1)

        await live.switch("other", client="web")
        await _until(lambda: any(isinstance(e, Notice) and "switched" in e.message for e in shown))
        said = [e.message for e in shown if isinstance(e, Notice)]
        assert (
            "web switched this session to other; the next prompt hands it the conversation" in said
        )
        assert remote.status().provider == "other"
        assert remote.status().session_id == live.session_id
