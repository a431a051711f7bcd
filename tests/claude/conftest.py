"""A ClaudeBridge wired to tests/claude/fake_claude.py (a `claude` on a private PATH).

Bridges are built the way the engine builds them: `BridgeContext.store` is a `ClaudeStore`
reading the fake HOME (the engine's one reader of the provider's store; `store=None` is a
bridge without one), and a resume or fork names the session resolved in that store
(`FakeClaude.request`), as `OpenRequest.of` does in the engine.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from avatar.bridges.base import BridgeContext, OpenMode, OpenRequest
from avatar.bridges.claude.bridge import ClaudeBridge
from avatar.core.config import Settings
from avatar.core.events import BaseEvent, PermissionRequested
from avatar.policy.permissions import Answer
from avatar.providers.registry import BUILTIN
from avatar.sessions.claude import ClaudeStore

FAKE = Path(__file__).parent / "fake_claude.py"


@dataclass
class FakeClaude:
    """Paths and knobs of one fake-claude setup, and a factory for bridges using it."""

    root: Path
    home: Path
    cwd: Path
    log: Path
    bin: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    notices: list[BaseEvent] = field(default_factory=list)
    allow: bool = False
    asked: list[PermissionRequested] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "HOME": str(self.home),
            "FAKE_CLAUDE_LOG": str(self.log),
            "AVATAR_TEST_MARKER": "passed-explicitly",
            **self.extra_env,
        }

    def bridge(self, settings: Settings | None = None, **ctx: Any) -> ClaudeBridge:
        """A bridge on this fake; `ctx` overrides BridgeContext fields (`store=None` too)."""

        async def permission(request: PermissionRequested) -> Answer:
            self.asked.append(request)
            return "allow" if self.allow else "deny"  # the policy's words, read by the bridge

        ctx.setdefault("store", self.store())
        ctx.setdefault("permission", permission)
        context = BridgeContext(
            spec=ctx.pop("spec", BUILTIN["claude"]),
            cwd=ctx.pop("cwd", self.cwd),
            settings=settings or Settings(),
            avatar_home=self.avatar_home,
            env=self.env,
            emit=self.notices.append,
            **ctx,
        )
        return ClaudeBridge(context)

    @property
    def avatar_home(self) -> Path:
        return self.root / "avatar-home"

    def store(self) -> ClaudeStore:
        """A reader of the fake HOME's Claude store, as the engine builds one."""
        return ClaudeStore("claude", self.env, self.avatar_home)

    def request(self, mode: OpenMode, session_id: str) -> OpenRequest:
        """A resume or fork of `session_id`, resolved in the store as the engine does."""
        return OpenRequest.of(mode, self.store().locate(session_id))

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        """What the fake logged (starts, user lines, control traffic)."""
        if not self.log.exists():
            return []
        rows = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [r for r in rows if kind is None or r["event"] == kind]

    async def starts(self, n: int) -> list[dict[str, Any]]:
        """The first `n` process starts, waiting for the fake to have logged them."""
        for _ in range(200):
            rows = self.events("start")
            if len(rows) >= n:
                return rows
            await asyncio.sleep(0.05)
        raise AssertionError(f"fake claude started {len(self.events('start'))} times, not {n}")

    @property
    def project(self) -> Path:
        from avatar.sessions.claude import project_slug

        return self.home / ".claude" / "projects" / project_slug(os.path.realpath(self.cwd))


@pytest.fixture
def fake(tmp_path: Path) -> FakeClaude:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "claude"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    exe.chmod(0o755)
    cwd = tmp_path / "proj"
    cwd.mkdir()
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    # The log lies in claude's own state directory: the only place outside the project the
    # sandbox lets claude (and so the fake) write.
    log = home / ".claude" / "fake.log"
    return FakeClaude(root=tmp_path, home=home, cwd=cwd, log=log, bin=bin_dir)


async def collect(events: AsyncIterator[BaseEvent]) -> list[BaseEvent]:
    return [e async for e in events]


@pytest.fixture
def run() -> Callable[[AsyncIterator[BaseEvent]], Awaitable[list[BaseEvent]]]:
    return collect
