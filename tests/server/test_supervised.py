"""The server never leaves a client hanging (docs/design.md §11, issue 32): a failure inside a
live session's turn ends that turn with an error every client sees and the session serves the
next prompt; a slow open holds up no other open; `ps` answers while another client's search
waits on the search index (a real `avatar serve`, the fake ACP agent)."""

from __future__ import annotations

import asyncio
import io
import json
import re
import sqlite3
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from avatar.cli.repl.repl import Repl
from avatar.cli.repl.screen import Screen
from avatar.core.config import parse_settings
from avatar.core.events import BaseEvent
from avatar.core.prompts import Prompt
from avatar.engine.engine import Engine
from avatar.server.hub import Event, Hub, OpenOptions
from tests.integration.test_acp_cli import write_fake_provider
from tests.support.acp_agent import provider_entry
from tests.support.drive import avatar, start
from tests.support.homes import AgentHome
from tests.support.served import collect, serving

pytestmark = pytest.mark.timeout(180)


class Faulty(Engine):
    """An engine whose turn fails as a bug would (not an `AvatarError`) when the prompt says
    so: the seam that stands for any unexpected exception below the live session."""

    async def send(self, prompt: str | Prompt) -> AsyncIterator[BaseEvent]:
        text = prompt if isinstance(prompt, str) else prompt.text
        async for event in super().send(text.replace("explode", "fine")):
            yield event
            if "explode" in text:
                raise RuntimeError("the bridge tripped over its own feet")


def _hub(tmp_path: Path, **agents: dict[str, Any]) -> Hub:
    providers = {
        name: provider_entry(tmp_path / f"state-{name}", **options)
        for name, options in agents.items()
    }
    settings = parse_settings({"providers": providers, "provider": next(iter(agents))})
    (tmp_path / "work").mkdir(exist_ok=True)

    def make(options: OpenOptions) -> Engine:
        return Faulty(
            settings,
            options.cwd,
            provider=options.provider,
            home=tmp_path / "home",
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        )

    return Hub(make, keep_warm=False)


async def test_a_turn_that_fails_unexpectedly_ends_with_an_error_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    hub = _hub(tmp_path, fake={})
    a: list[Event] = []
    b: list[Event] = []
    tasks: list[asyncio.Task[None]] = []
    try:
        live = await hub.open(
            OpenOptions(cwd=tmp_path / "work", provider="fake"),
            client="a",
            on_events=lambda s: tasks.append(collect(s, a)),
        )
        tasks.append(collect(live.subscribe("b", replay=False), b))
        failing = asyncio.ensure_future(live.prompt("explode now", "a"))
        after = asyncio.ensure_future(live.prompt("and then?", "b"))
        ended = await asyncio.wait_for(failing, 30)
        assert ended["exit"] == 1
        assert ended["error"] == (
            "internal error: RuntimeError: the bridge tripped over its own feet"
        )
        nxt = await asyncio.wait_for(after, 30)
        assert nxt["exit"] == 0 and nxt["error"] is None
        await asyncio.sleep(0.05)
        for seen in (a, b):
            ends = [e for e in seen if e["type"] == "turn_ended"]
            assert [(e["client"], e["error"]) for e in ends] == [
                ("a", ended["error"]),
                ("b", None),
            ]
        assert [i.state for i in hub.live()] == ["idle"]
    finally:
        await hub.close()
        for task in tasks:
            await task


async def test_a_slow_open_holds_up_no_other_open(tmp_path: Path) -> None:
    hub = _hub(tmp_path, slow={"new_delay": 30.0}, fast={})
    try:
        work = tmp_path / "work"
        slow = asyncio.ensure_future(hub.open(OpenOptions(cwd=work, provider="slow"), client="a"))
        await asyncio.sleep(0)  # (the slow one asks first)
        fast = await asyncio.wait_for(
            hub.open(OpenOptions(cwd=work, provider="fast"), client="b"), 25
        )
        assert not slow.done()  # the fast one opened while the slow one was still opening
        assert fast.session_id
        slow.cancel()
    finally:
        await hub.close()


def test_ps_answers_while_another_client_searches(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    write_fake_provider(agent_home)
    env, cwd = avatar_env, agent_home.workdir
    with serving(env, cwd):
        assert avatar(env, cwd, "-p", "fake", "chat", "first words").returncode == 0
        assert avatar(env, cwd, "session", "search", "words").returncode == 0  # (the index)
        assert avatar(env, cwd, "-p", "fake", "chat", "more words").returncode == 0
        # Another avatar is writing the search index: the search waits for it.
        index = sqlite3.connect(
            Path(env["AVATAR_HOME"]) / "cache" / "search.sqlite", isolation_level=None
        )
        index.execute("BEGIN IMMEDIATE")
        try:
            search = start(env, cwd, "session", "search", "words")
            time.sleep(0.5)  # (it has reached the index)
            ps = subprocess.run(
                ["avatar", "ps", "--json"], env=env, cwd=cwd, capture_output=True, text=True
            )
            still_searching = search.poll() is None
        finally:
            index.execute("ROLLBACK")
            index.close()
        out, err = search.communicate(timeout=60)
    # (it lists the sessions the server keeps loaded a while after their chats)
    assert ps.returncode == 0 and isinstance(json.loads(ps.stdout), list), ps.stderr
    assert still_searching  # ps answered while the search waited
    assert search.returncode == 0, err
    assert "more words" in out


async def test_a_repl_turn_that_fails_unexpectedly_is_said_and_the_line_typed_meanwhile_runs(
    tmp_path: Path,
) -> None:
    settings = parse_settings(
        {"providers": {"fake": provider_entry(tmp_path / "state")}, "provider": "fake"}
    )
    (tmp_path / "work").mkdir()
    engine = Faulty(
        settings,
        tmp_path / "work",
        provider="fake",
        home=tmp_path / "home",
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    out = io.StringIO()
    repl = Repl(engine, Screen(out, live_tail=False))
    try:
        await repl.handle("explode now")
        await repl.handle("and then?")  # typed while the turn runs: queued after it
        assert [line for line, _ in repl.queued] == ["and then?"]
        for _ in range(1500):  # (30 s: a line left queued for ever fails here)
            if not repl.busy and not repl.queued:
                break
            await asyncio.sleep(0.02)
        shown = out.getvalue()
        assert "avatar: internal error: RuntimeError: the bridge tripped over its own feet" in (
            shown
        )
        # It ran after the failed turn, in the same session. (The failed turn was cancelled
        # when its caller stopped listening: whether the agent kept it in its history depends
        # on whether the cancel came before its last chunk, so the reply's number does too.)
        assert re.search(r"reply \d to 'and then\?'", shown), shown
        assert shown.count("session: ") == 1, shown
        assert "outside any turn" not in shown  # (the rest of the failed turn: nobody's)
        assert not repl.queued and repl.toolbar().endswith("idle")
    finally:
        await repl.close()
