"""Fixtures: the real provider-store samples laid out in a throw-away HOME."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from avatar.sessions.claude import ClaudeStore
from avatar.sessions.codex import CodexStore
from avatar.sessions.gemini import GeminiStore
from tests.sessions.synth import FIXTURES


@dataclass
class Homes:
    """A fake HOME holding copies of the fixture stores, and stores reading them."""

    home: Path
    avatar_home: Path

    @property
    def env(self) -> dict[str, str]:
        return {"HOME": str(self.home), "CODEX_HOME": str(self.home / ".codex")}

    def claude(self, **env: str) -> ClaudeStore:
        return ClaudeStore("claude", {**self.env, **env}, self.avatar_home)

    def codex(self, **env: str) -> CodexStore:
        return CodexStore("codex", {**self.env, **env}, self.avatar_home)

    def gemini(self, **env: str) -> GeminiStore:
        return GeminiStore("gemini", {**self.env, **env}, self.avatar_home)

    @property
    def claude_project(self) -> Path:
        return self.home / ".claude" / "projects" / "-home-dev-proj"

    @property
    def codex_day(self) -> Path:
        return self.home / ".codex" / "sessions" / "2026" / "11" / "21"

    @property
    def gemini_chats(self) -> Path:
        return self.home / ".gemini" / "tmp" / "proj" / "chats"


def _copy(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)  # the shared samples are read-only
    dst.chmod(0o755)


@pytest.fixture
def homes(tmp_path: Path) -> Homes:
    """HOME with `.claude`, `.codex` and `.gemini` copied from tests/fixtures/provider-stores."""
    home = tmp_path / "home"
    home.mkdir()
    _copy(FIXTURES / "claude", home / ".claude")
    _copy(FIXTURES / "codex", home / ".codex")
    _copy(FIXTURES / "gemini", home / ".gemini")
    return Homes(home=home, avatar_home=tmp_path / "avatar-home")
