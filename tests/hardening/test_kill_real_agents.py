"""Kill tests through the real agent CLIs (codex-acp, Gemini, claude-agent-acp, Claude Code).

SIGKILL the agent's process group at random points (seeded) while it opens a session, reloads
it, answers a prompt or lists its sessions: the engine reports the death with its reason
(`killed by SIGKILL`) in the answer to what it was doing, stays usable, and its next `send()`
restarts the agent and reopens the same session id. And SIGKILL `avatar` itself mid-turn: no
process of that agent outlives it, and `chat --continue` finds the session.

One engine per provider, driven in-process through the public API against the fake model
server. `AVATAR_KILLS=N` sets the kills per provider (default 8); `AVATAR_KILL_SEED` the seed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import time
from pathlib import Path

import pytest

from avatar.core.errors import AvatarError
from avatar.core.events import BaseEvent, Error, TextDelta
from avatar.engine.engine import Engine
from tests.support.drive import avatar, backdate_gemini, start
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

KILLS = int(os.environ.get("AVATAR_KILLS", "8"))
SEED = int(os.environ.get("AVATAR_KILL_SEED", "14"))
# Gemini CLI wipes a session's history when it loads it in the minute its file was started,
# so avatar waits for the minute to turn before reopening one (avatar/bridges/acp/quirks.py).
WAITS_FOR_THE_MINUTE = {"gemini"}
# The ACP agents, asked for their sessions by `engine.agent.refresh` (Claude Code has no listing).
LISTS = {"codex", "gemini", "claude-acp"}
PROVIDERS = [
    ("codex", "codex-acp", "responses"),
    ("gemini", "gemini", "gemini"),
    ("claude-acp", "claude-agent-acp", "anthropic"),
    ("claude", "claude", "anthropic"),
]


def _engine(home: AgentHome, provider: str) -> Engine:
    env = avatar_env(home)
    return Engine.from_config(
        home.workdir, provider=provider, env=env, home=Path(env["AVATAR_HOME"])
    )


def _kill_group(pid: int) -> float:
    """SIGKILL the process group led by `pid` (the agent and its children); the kill's time."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(os.getpgid(pid), signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    return time.monotonic()


async def _kill_after(
    engine: Engine, delay: float, killed: set[int], aimed: asyncio.Event
) -> float | None:
    """Kill the engine's agent `delay` s after it runs; the kill's time.

    The delay counts from the agent's start, not the call's: an agent restarted after the last
    kill may take longer than any delay to start on a loaded machine, and a kill with no
    process to land on proves nothing. `killed` holds the pids killed before (the engine may
    still name the dead one until it restarts the agent); `aimed` is set once a live one is
    found (the caller cancels a killer that found none by the end of its turn).
    """
    while not (pid := engine.status().facts.get("pid")) or int(pid) in killed:
        await asyncio.sleep(0.01)
    aimed.set()
    await asyncio.sleep(delay)
    killed.add(int(pid))
    return _kill_group(int(pid))


async def _turn(engine: Engine, text: str) -> list[BaseEvent]:
    return [e async for e in engine.send(text)]


def _text(events: list[BaseEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


@pytest.mark.parametrize(("provider", "program", "api"), PROVIDERS)
def test_sigkill_the_real_agent_at_random_points(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str, program: str, api: str
) -> None:
    require_bridges(program)
    rng = random.Random(SEED)
    # Every reply streams slowly so a kill lands mid-turn most of the time.
    model_server.default_reply = Reply.text("slow words keep coming " * 6).with_delay(0.05)

    async def go() -> None:
        engine = _engine(agent_home, provider)
        try:
            model_server.script(api, Reply.text("first answer"))
            events = await _turn(engine, "hello")
            assert "first answer" in _text(events), events
            sid = engine.status().session_id
            assert sid is not None
            reported = 0
            listed = 0
            killed_pids: set[int] = set()
            unreported = 0  # kills not yet reported (one landing after its turn is told later)
            for i in range(KILLS):
                # A third of the kills land while the agent is asked for its sessions (it was
                # most likely killed just before, so it is started again for the listing).
                listing = provider in LISTS and rng.random() < 1 / 3
                aimed = asyncio.Event()
                killer = asyncio.ensure_future(
                    _kill_after(engine, rng.uniform(0.0, 1.0), killed_pids, aimed)
                )
                failure = ""
                try:
                    if listing:
                        listed += 1
                        found = await asyncio.wait_for(engine.agent.refresh(provider), 30)
                        assert sid in {s.id for s in found}, (SEED, i, found)
                        events = []
                    else:
                        events = await asyncio.wait_for(_turn(engine, f"turn {i}"), 30)
                    errors = [e for e in events if isinstance(e, Error)]
                    failure = errors[-1].message if errors else ""
                except AvatarError as e:  # a death while reopening or listing is raised
                    failure = str(e)
                if not aimed.is_set():  # no agent ran (a death told at once): no kill now
                    killer.cancel()
                elif await killer is not None:
                    unreported += 1
                if failure:
                    # Also a kill landing just as a turn starts, before the bridge saw it, or
                    # just after the last one ended, told by the next.
                    assert "killed by SIGKILL" in failure, (SEED, i, failure)
                    assert unreported > 0, (SEED, i, failure)
                    unreported -= 1
                    reported += 1
                if provider in WAITS_FOR_THE_MINUTE:
                    # Reopening now would wait for the clock minute to turn: go on in a new
                    # session, and reopen the first one once, at the end.
                    await engine.close()
                    await engine.agent.new()
                # Otherwise the engine's next send restarts the agent and reopens the session.
            assert reported >= KILLS // 3, (SEED, reported)
            assert listed >= KILLS // 6 or provider not in LISTS, (SEED, listed)
            if provider in WAITS_FOR_THE_MINUTE:
                await engine.close()
                backdate_gemini(agent_home, provider, sid)
                await engine.agent.resume(sid)
            # (The reply is the default one: a side request may take a scripted one.)
            events = await asyncio.wait_for(_turn(engine, "still there?"), 60)
            assert "slow words" in _text(events), (SEED, events)
            assert not [e for e in events if isinstance(e, Error)], (SEED, events)
            assert engine.status().session_id == sid, (SEED, engine.status())
            # The reopened session still holds the conversation from before the kills.
            last = [r for r in model_server.requests_for(api) if "still there?" in r.all_text()]
            assert last and "first answer" in last[-1].all_text(), (SEED, last)
        finally:
            await engine.close()

    asyncio.run(go())


def _processes_with(marker: str) -> list[int]:
    """Live pids whose environment or command line carries `marker` (the test's HOME)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue
            blob = (entry / "environ").read_bytes() + (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in blob:
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize(("provider", "program", "api"), PROVIDERS)
def test_sigkill_avatar_mid_turn_leaves_no_real_agent_behind(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str, program: str, api: str
) -> None:
    require_bridges(program)
    env = avatar_env(agent_home)
    cwd = agent_home.workdir
    model_server.script(api, Reply.text("first answer"))
    first = avatar(env, cwd, "-p", provider, "chat", "hello", timeout=120)
    assert first.returncode == 0, first.stderr
    sid = first.stderr.split("session: ")[1].split()[0]
    backdate_gemini(agent_home, provider, sid)  # no wait for Gemini's same-minute reload
    model_server.script(api, Reply.text("a long slow answer " * 20).with_delay(0.3))
    proc = start(env, cwd, "-p", provider, "chat", "--continue", "a long answer please")
    assert proc.stdout is not None
    proc.stdout.read(3)  # the answer is streaming: the agent is mid-turn
    marker = env["HOME"]
    assert _processes_with(marker), "no agent process found"
    proc.kill()
    proc.wait(10)
    deadline = time.monotonic() + 30  # (they die with avatar: a liveness wait)
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _processes_with(marker), "an agent outlived avatar"
    model_server.script(api, Reply.text("still here"))
    backdate_gemini(agent_home, provider, sid)
    again = avatar(env, cwd, "-p", provider, "chat", "--continue", "still there?", timeout=120)
    assert again.returncode == 0, again.stderr
    assert "still here" in again.stdout, again.stdout
    assert f"session: {sid} " in again.stderr, again.stderr
