"""Kill tests: SIGKILL the agent at random points (opening, loading, prompting); avatar
reports the death with its reason (in the answer to the request it hit, or to the engine's
listeners when it hit between requests) and the session reopens. And SIGKILL avatar
itself mid-turn: no agent process is left behind, and `--continue` finds the session.

These use the fake ACP agent (`tests/support/acp_agent.py`); `AVATAR_KILLS=N` sets the number
of kills (default 20). The same through the real agent CLIs is in `test_kill_real_agents.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from avatar.bridges.base import OpenRequest
from avatar.core.errors import ProviderError
from avatar.core.events import Error, TurnFinished
from tests.acp.conftest import REPO, Harness, build, text_of
from tests.support.acp_agent import command
from tests.support.drive import avatar

pytestmark = pytest.mark.slow  # about a minute: one agent start per kill

KILLS = int(os.environ.get("AVATAR_KILLS", "20"))
PHASES = ("prompt", "load", "open")


async def _kill_when(h: Harness, delay: float) -> bool:
    """SIGKILL the running agent after `delay` s; whether a process was there to kill."""
    await asyncio.sleep(delay)
    pid = h.bridge.status().get("pid")
    sent = False
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):  # it may have died already
            os.kill(pid, signal.SIGKILL)
            sent = True
    return sent


async def _restart(h: Harness, sid: str) -> None:
    """What the engine does after a death: start the agent again and reopen the session."""
    if not h.bridge.alive:
        await h.bridge.start()
    started = await h.bridge.open(OpenRequest("resume", sid))
    assert started.session_id == sid and started.how in ("loaded", "resumed"), started


async def test_sigkill_the_agent_at_random_points(tmp_path: Path) -> None:
    rng = random.Random(14)
    h = build(tmp_path / "agent", "load,list", chunk_delay=0.05)
    await h.bridge.start()
    try:
        await h.bridge.open(OpenRequest("new"))
        sid = h.bridge.session_id
        assert sid is not None
        await h.turn("first")
        kills = 0
        for i in range(KILLS):
            phase = PHASES[i % len(PHASES)]
            told_before = len(_errors(h))
            told = False  # in the answer to the request the kill hit
            if phase == "prompt":
                turn = asyncio.ensure_future(h.turn(f"turn {i}"))
                sent = await _kill_when(h, rng.uniform(0.0, 0.2))
                events = await asyncio.wait_for(turn, 10)
                if isinstance(events[-1], Error):
                    assert "exited unexpectedly (killed by SIGKILL)" in events[-1].message
                    told = True
                else:  # the turn ended just before the kill: the death is reported outside it
                    assert isinstance(events[-1], TurnFinished)
            else:
                request = OpenRequest("resume", sid) if phase == "load" else OpenRequest("new")
                opening = asyncio.ensure_future(h.bridge.open(request))
                sent = await _kill_when(h, rng.uniform(0.0, 0.05))
                try:
                    await asyncio.wait_for(opening, 10)
                except ProviderError as e:
                    assert "killed by SIGKILL" in str(e)
                    told = True
            # A death outside a request is noticed (and reported) too, by the agent's exit
            # (nothing here waits on a clock: an unnoticed death hangs until the test's timeout).
            while h.bridge.alive:
                await asyncio.sleep(0.01)
            if sent:  # every kill is told, in the request it hit or to the listeners
                kills += 1
                while not told and len(_errors(h)) == told_before:
                    await asyncio.sleep(0.01)
            await _restart(h, sid)
        events = await h.turn("after every kill")
        assert isinstance(events[-1], TurnFinished) and "after every kill" in text_of(events)
        assert all("killed by SIGKILL" in e.message for e in _errors(h)), _errors(h)
        assert kills == KILLS, kills  # each kill found an agent running (started before it)
    finally:
        await h.bridge.stop()


def _errors(h: Harness) -> list[Error]:
    """The errors reported outside requests (to the engine's listeners)."""
    return [e for e in h.emitted if isinstance(e, Error)]


def _children(pid: int) -> list[int]:
    """Pids whose parent is `pid` (from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_sigkill_avatar_mid_turn_leaves_no_agent_behind(
    tmp_path: Path, avatar_env: dict[str, str]
) -> None:
    state = tmp_path / "state"
    argv = command({"state_dir": str(state), "chunk_delay": 0.5}, "load,list")
    config = Path(avatar_env["AVATAR_CONFIG"])
    fake = {"transport": "acp", "command": argv, "state_dirs": [f"{state}/"]}
    config.write_text(json.dumps({"providers": {"fake": fake}}))
    env = {**avatar_env, "PYTHONPATH": str(REPO)}
    cwd = tmp_path / "work"
    cwd.mkdir()
    first = avatar(env, cwd, "-p", "fake", "chat", "hello")
    assert first.returncode == 0, first.stderr
    proc = subprocess.Popen(
        ["avatar", "-p", "fake", "chat", "--continue", "a long answer please"],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    proc.stdout.read(5)  # the answer is streaming: the agent is mid-turn
    agents = _children(proc.pid)
    assert agents, "no agent process found"
    proc.kill()
    proc.wait(10)
    deadline = time.monotonic() + 30  # (they die with avatar: a liveness wait)
    while any(_alive(p) for p in agents) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in agents), "an agent outlived avatar"
    again = avatar(env, cwd, "-p", "fake", "chat", "--continue", "still there?")
    assert again.returncode == 0, again.stderr
    assert "(fake, continued)" in again.stderr or "(fake, loaded)" in again.stderr, again.stderr


async def test_a_death_the_bridge_has_not_seen_yet_is_named(tmp_path: Path) -> None:
    """A turn sent the instant after the agent died (before the exit watcher ran) is refused
    with how the agent went, not a bare "not running"."""
    h = build(tmp_path / "agent", "load,list")
    await h.bridge.start()
    try:
        await h.bridge.open(OpenRequest("new"))
        pid = h.bridge.status().get("pid")
        assert isinstance(pid, int)
        os.kill(pid, signal.SIGKILL)
        while h.bridge.alive:  # the process is reaped; no event has been handled yet
            await asyncio.sleep(0.01)
        events = [e async for e in h.bridge.send("anyone there?")]
        errors = [e for e in events if isinstance(e, Error)]
        assert errors and "exited unexpectedly (killed by SIGKILL)" in errors[0].message, events
    finally:
        await h.bridge.stop()
