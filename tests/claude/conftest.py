"""A ClaudeBridge wired to tests/claude/fake_claude.py (a `claude` on a private PATH)."""

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

from avatar.bridges.base import BridgeContext
from avatar.bridges.claude import ClaudeBridge
from avatar.config import Settings
from avatar.events import BaseEvent, PermissionRequested
from avatar.providers import BUILTIN

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
        async def permission(request: PermissionRequested) -> bool:
            return self.allow

        context = BridgeContext(
            spec=ctx.pop("spec", BUILTIN["claude"]),
            cwd=ctx.pop("cwd", self.cwd),
            settings=settings or Settings(),
            avatar_home=self.root / "avatar-home",
            env=self.env,
            permission=permission,
            emit=self.notices.append,
            **ctx,
        )
        return ClaudeBridge(context)

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
    home.mkdir()
    return FakeClaude(root=tmp_path, home=home, cwd=cwd, log=tmp_path / "fake.log", bin=bin_dir)


async def collect(events: AsyncIterator[BaseEvent]) -> list[BaseEvent]:
    return [e async for e in events]


@pytest.fixture
def run() -> Callable[[AsyncIterator[BaseEvent]], Awaitable[list[BaseEvent]]]:
    return collect
