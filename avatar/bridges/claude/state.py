"""Where the open Claude Code session stands, as one value: what claude has of it on disk
decides how a (re)started `claude -p` process is told about it (`argv()`).

- `Fresh`: avatar chose the id (`--session-id`); claude writes the transcript with the first
  turn, so until then a restart starts the session again under the same id.
- `OnDisk`: claude has the transcript; a restart resumes it (`--resume`).
- `PendingFork`: a fork claude writes only with its first turn; until then a restart forks
  again (`--resume PARENT --fork-session --session-id ID`), and a fork left without a turn
  is written by avatar (`avatar.sessions.claude_fork.write_fork`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from avatar.sessions.types import SessionInfo


@dataclass(frozen=True)
class Fresh:
    """A new session claude has not written yet."""

    session_id: str

    def argv(self) -> list[str]:
        """The session arguments of a claude process for this session."""
        return ["--session-id", self.session_id]


@dataclass(frozen=True)
class OnDisk:
    """A session claude has written: it is resumed."""

    session_id: str

    def argv(self) -> list[str]:
        """The session arguments of a claude process for this session."""
        return ["--resume", self.session_id]


@dataclass(frozen=True)
class PendingFork:
    """A fork of `parent` that claude has not written yet."""

    session_id: str
    parent: SessionInfo

    def argv(self) -> list[str]:
        """The session arguments of a claude process for this session."""
        return ["--resume", self.parent.id, "--fork-session", "--session-id", self.session_id]


ClaudeSession = Fresh | OnDisk | PendingFork
"""The open session of a `ClaudeBridge` (None before one is opened)."""
