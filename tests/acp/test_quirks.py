"""Quirks: claude executable, Gemini's same-minute load (history must survive), stderr tail."""

from __future__ import annotations

import asyncio
import os
import stat
import time
from pathlib import Path

import pytest

from avatar.bridges.acp import launch
from avatar.bridges.acp import quirks as acp_quirks
from avatar.bridges.base import OpenRequest
from avatar.bridges.process import StderrTail
from avatar.core.config import ProviderConfig, Settings
from avatar.core.errors import ProviderError
from avatar.providers.registry import BUILTIN
from tests.acp.conftest import Factory
from tests.support.acp_agent import seed_session

GEMINI = frozenset({"same_minute_load", "late_replay"})


def _exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_installed_claude_is_found(tmp_path: Path) -> None:
    spec = BUILTIN["claude-acp"]
    on_path = _exe(tmp_path / "bin" / "claude")
    env = {"PATH": str(tmp_path / "bin")}
    assert launch.quirk_env(spec, Settings(), env) == {"CLAUDE_CODE_EXECUTABLE": str(on_path)}
    configured = _exe(tmp_path / "opt" / "my-claude")
    settings = Settings(providers={"claude": ProviderConfig(executable=str(configured))})
    assert launch.quirk_env(spec, settings, env)["CLAUDE_CODE_EXECUTABLE"] == str(configured)
    # Already set: left alone. Other providers: nothing.
    assert launch.quirk_env(spec, Settings(), {**env, "CLAUDE_CODE_EXECUTABLE": "x"}) == {}
    assert launch.quirk_env(BUILTIN["codex"], Settings(), env) == {}


def test_stderr_tail_keeps_the_last_lines() -> None:
    tail = StderrTail(lines=3)
    tail.feed(b"one\ntwo\nthr")
    tail.feed(b"ee\n\nfour\nfive")
    assert tail.text() == "two\nthree\nfour"
    tail.close()
    assert tail.text() == "three\nfour\nfive"
    assert tail.text(1) == "five"
    tail.feed(b"x" * 100_000 + b"\n")
    assert tail.text(1).endswith(" …") and len(tail.text(1)) < 2100


def _gemini_file(home: Path, session_id: str, minute: str) -> Path:
    chats = home / ".gemini" / "tmp" / "work" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    path = chats / f"session-{minute}-{session_id[:8]}.jsonl"
    path.write_text(
        f'{{"sessionId":"{session_id}","startTime":"2020-01-01T00:00:00Z"}}\n'
        '{"id":"m1","type":"user","content":"earlier question 1"}\n'
    )
    return path


def test_gemini_session_files(tmp_path: Path) -> None:
    sid = "0c17e117-128c-4faf-885e-a3075f89ee69"
    path = _gemini_file(tmp_path, sid, "2026-11-21T23-56")
    _gemini_file(tmp_path, "0c17e117-ffff-4faf-885e-a3075f89ee69", "2026-11-21T23-57")
    assert acp_quirks.gemini_session_files({"HOME": str(tmp_path)}, sid) == [path]
    assert acp_quirks.created_minute(path) == "2026-11-21T23-56"
    assert acp_quirks.created_minute(Path("session-bogus.jsonl")) is None


async def test_failed_gemini_load_restores_the_history(fake: Factory, tmp_path: Path) -> None:
    """The Gemini bug, played by the fake agent: the load truncates the file, then fails."""
    root = tmp_path / "agent"
    (root / "work").mkdir(parents=True)
    sid = seed_session(root / "state", root / "work", 1)
    home = tmp_path / "home"
    victim = _gemini_file(home, sid, "2020-01-01T00-00")  # an old minute: the guard lets it load
    before = victim.read_bytes()
    h = await fake(
        "load",
        root=root,
        quirks=GEMINI,
        env={**os.environ, "HOME": str(home)},
        damage_on_load=str(victim),
        writes=(str(home / ".gemini"),),
    )
    started = await h.bridge.open(OpenRequest("resume", sid))
    assert started.how == "new"
    assert victim.read_bytes() == before
    restored, fallback = h.notices()
    assert "restored it from its backup" in restored
    assert "No previous sessions found" in fallback and "opened a new session" in fallback
    # The backup is cleaned up once the original is back.
    assert list((root / "avatar-home" / "backups" / "fake").iterdir()) == []


async def early_in_a_minute() -> None:
    """Start a same-minute test with enough of the minute left (agent start takes ~1 s)."""
    left = 60 - time.time() % 60
    if left < 5:
        await asyncio.sleep(left + 0.1)


async def test_same_minute_load_is_refused_when_not_waiting(fake: Factory, tmp_path: Path) -> None:
    await early_in_a_minute()
    root = tmp_path / "agent"
    (root / "work").mkdir(parents=True)
    sid = seed_session(root / "state", root / "work", 1)
    home = tmp_path / "home"
    victim = _gemini_file(home, sid, acp_quirks.current_minute())
    before = victim.read_bytes()
    h = await fake("load", root=root, quirks=GEMINI, env={**os.environ, "HOME": str(home)})
    h.bridge.same_minute.limit = 0
    # The session is there and loads a minute later: an error to retry, not a new session.
    with pytest.raises(ProviderError, match=r"before the clock minute turns.*; try again in"):
        await h.bridge.open(OpenRequest("resume", sid))
    assert h.requests("session/load") == h.requests("session/new") == []
    assert victim.read_bytes() == before
    assert h.notices() == []


async def test_same_minute_load_waits_for_the_minute(fake: Factory, tmp_path: Path) -> None:
    await early_in_a_minute()
    root = tmp_path / "agent"
    (root / "work").mkdir(parents=True)
    sid = seed_session(root / "state", root / "work", 1)
    home = tmp_path / "home"
    _gemini_file(home, sid, acp_quirks.current_minute())
    h = await fake("load", root=root, quirks=GEMINI, env={**os.environ, "HOME": str(home)})
    waited: list[float] = []

    async def no_wait(seconds: float) -> None:
        waited.append(seconds)

    h.bridge.same_minute.sleep = no_wait
    started = await h.bridge.open(OpenRequest("resume", sid))
    assert (started.session_id, started.how) == (sid, "loaded")
    assert len(waited) == 1 and 0 < waited[0] <= 61
    assert "waiting" in h.notices()[0]
