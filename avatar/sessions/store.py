"""The interface every on-disk session reader implements (no process is ever spawned)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path

from avatar.errors import NotSupportedError
from avatar.sessions.types import SessionInfo, Transcript


class SessionStore(ABC):
    """Reads one provider's session store.

    `env` is the environment the provider's CLI would run with (HOME, CODEX_HOME, ...), so a
    store finds the same files the agent writes. Broken or unknown files and lines are
    skipped, never fatal; each skip adds a one-line message to `warnings`.
    """

    def __init__(self, provider: str, env: Mapping[str, str], avatar_home: Path) -> None:
        self.provider = provider
        self.env = env
        self.avatar_home = avatar_home
        self.warnings: list[str] = []

    def home(self) -> Path:
        """The user's home directory as the provider sees it."""
        return Path(self.env.get("HOME") or Path.home())

    @abstractmethod
    def list(self, cwd: Path | None) -> list[SessionInfo]:
        """Sessions started in `cwd` (every session when None), in any order."""

    @abstractmethod
    def transcript(self, session_id: str) -> Transcript:
        """The canonical transcript of one session (full id); SessionNotFoundError if absent."""

    def find(self, prefix: str) -> list[SessionInfo]:
        """Sessions (any cwd) whose id starts with `prefix`."""
        return [s for s in self.list(None) if s.id.startswith(prefix)]

    def delete(self, session_id: str) -> None:
        """Delete a session's files; most stores cannot."""
        raise NotSupportedError(self.provider, "deleting a session")
