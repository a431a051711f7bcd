"""Attached terminals tell the truth (docs/design.md §11, issue 32), in-process: the server on
its socket in the test's runtime dir, a live session of the fake ACP agent, and REPLs (their
screens written to strings) on `RemoteEngine`s attached to it, as `avatar attach` runs them.
Two terminals answering one permission question at the same moment: exactly one answer
applies and both show that one; an attach mid-turn shows the running turn, not idle; when the
server stops, a prompt typed there is kept and said to be, and the status line says the server
is gone; leaving (Ctrl-D) says nothing of the server."""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from avatar.cli.repl.repl import Repl
from avatar.cli.repl.screen import Screen
from avatar.core.config import Settings, parse_settings
from avatar.engine.engine import Engine
from avatar.server.hub import Event, Hub, LiveSession, OpenOptions
from avatar.server.protocol import socket_path
from avatar.server.remote import RemoteEngine
from avatar.server.serving import Server
from tests.support.acp_agent import provider_entry
from tests.support.served import collect

pytestmark = pytest.mark.timeout(90)


class Setup:
    """The server, the settings its engines and the attached ones are built from."""

    def __init__(self, tmp_path: Path, server: Server) -> None:
        self.tmp_path, self.server = tmp_path, server
        self.settings = Settings()
        self.agent()
        self.repls: list[Repl] = []
        self.tasks: list[asyncio.Task[None]] = []

    def agent(self, **options: Any) -> None:
        """The fake agent's behaviour (a slow answer, by default)."""
        entry = provider_entry(self.tmp_path / "state", **{"chunk_delay": 0.3, **options})
        self.settings = parse_settings({"providers": {"fake": entry}, "provider": "fake"})

    def engine(self, kind: type[Engine] = Engine) -> Engine:
        return kind(
            self.settings,
            self.tmp_path / "work",
            provider="fake",
            home=self.tmp_path / "home",
            env={"PATH": "/usr/bin:/bin", "HOME": str(self.tmp_path)},
        )

    async def live(self) -> LiveSession:
        """A live session of the server's, kept by a client that only watches."""
        seen: list[Event] = []
        live = await self.server.hub.open(
            OpenOptions(cwd=self.tmp_path / "work"),
            client="keeper",
            on_events=lambda s: self.tasks.append(collect(s, seen)),
        )
        return live

    async def attached(self, live: LiveSession, name: str) -> Repl:
        """A REPL attached to `live` as `avatar attach` runs it."""
        engine = self.engine(RemoteEngine)
        assert isinstance(engine, RemoteEngine)
        messages = await engine.attach(live.session_id, client=name)
        repl = Repl(engine, Screen(io.StringIO(), live_tail=False))
        repl.screen.history(messages)
        engine.listen()
        self.repls.append(repl)
        return repl


@pytest.fixture
async def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Setup]:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("AVATAR_NO_SERVER", raising=False)
    (tmp_path / "work").mkdir()
    made = Setup(tmp_path, Server(Hub(keep_warm=False), path=Path(socket_path())))
    made.server.hub.make_engine = lambda options: made.engine()
    ready = asyncio.Event()
    task = asyncio.ensure_future(made.server.serve(ready.set))
    await ready.wait()
    yield made
    for repl in made.repls:
        await repl.close()
    made.server.stop()
    await task
    for collecting in made.tasks:
        collecting.cancel()


def _shown(repl: Repl) -> str:
    out = repl.screen.out
    assert isinstance(out, io.StringIO)
    return out.getvalue()


async def _until(check: Callable[[], Any], timeout: float = 30) -> Any:
    for _ in range(int(timeout / 0.02)):
        got = check()
        if got:
            return got
        await asyncio.sleep(0.02)
    raise AssertionError("timed out")


async def test_two_terminals_answering_at_once_show_the_one_answer_that_applies(
    setup: Setup,
) -> None:
    setup.agent(permission=True)
    live = await setup.live()
    one = await setup.attached(live, "attach:1")
    two = await setup.attached(live, "attach:2")
    turn = asyncio.ensure_future(live.prompt("may I", "keeper"))
    try:
        await _until(lambda: one.asking.pending is not None and two.asking.pending is not None)
    except AssertionError:
        raise AssertionError(_shown(one) + "\n----\n" + _shown(two)) from None
    one.asking.answer_key("y")  # the same moment: both answers are on their way
    two.asking.answer_key("n")
    ended = await asyncio.wait_for(turn, 30)
    assert ended["exit"] == 0
    said = [
        [line.strip() for line in _shown(repl).splitlines() if "→" in line] for repl in (one, two)
    ]
    assert all(len(lines) == 1 for lines in said), said
    verdicts = {re.split(r"[:;(]", lines[0])[0].strip() for lines in said}
    assert len(verdicts) == 1, said  # both show the same answer
    applied = verdicts.pop()
    assert applied in ("→ allowed once", "→ denied")
    # The other one says whose answer it was.
    assert sum(bool(re.search(r"\(attach:[12] answered first\)", s[0])) for s in said) == 1
    agent_got = "[permission: yes]" if applied == "→ allowed once" else "[permission: no]"
    await _until(lambda: agent_got in _shown(one) and agent_got in _shown(two))


async def test_an_attach_mid_turn_shows_the_running_turn(setup: Setup) -> None:
    live = await setup.live()
    turn = asyncio.ensure_future(live.prompt("take your time", "keeper"))
    await _until(lambda: live.running_client == "keeper")
    late = await setup.attached(live, "attach:late")
    await _until(lambda: "keeper's turn" in late.toolbar())
    assert "idle" not in late.toolbar()
    await asyncio.wait_for(turn, 30)
    await _until(lambda: late.toolbar().endswith("idle"))


async def test_when_the_server_stops_a_typed_prompt_is_kept_and_the_status_line_says_so(
    setup: Setup,
) -> None:
    live = await setup.live()
    repl = await setup.attached(live, "attach:1")
    kept: list[str] = []
    repl.put_back = lambda text: kept.append(text) is None
    busy = asyncio.ensure_future(live.prompt("take your time", "keeper"))
    await _until(lambda: live.running_client == "keeper")
    await repl.handle("my queued question")  # waits behind the keeper's turn
    await _until(lambda: live.info().queued == 1)
    setup.server.stop()
    await _until(lambda: not repl.busy)
    shown = _shown(repl)
    assert kept == ["my queued question"]
    assert "(your prompt is back in the input line)" in shown
    assert "the server stopped" in shown
    assert "the server stopped: Ctrl-D leaves" in repl.toolbar()
    await repl.handle("typed afterwards")
    await _until(lambda: not repl.busy and len(kept) == 2)
    assert kept[1] == "typed afterwards"
    busy.cancel()


async def test_leaving_says_nothing_of_the_server(setup: Setup) -> None:
    live = await setup.live()
    repl = await setup.attached(live, "attach:1")
    await _until(lambda: "attach:1" in live.clients)
    setup.repls.remove(repl)
    await repl.close()  # what Ctrl-D does
    await asyncio.sleep(0.1)
    assert "server" not in _shown(repl)
    await _until(lambda: "attach:1" not in live.clients)
    assert not live.closed  # (its keeper is still there)
