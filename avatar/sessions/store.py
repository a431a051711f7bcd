"""The interface every on-disk session reader implements (no process is ever spawned)."""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from avatar.core.errors import NotSupportedError, SessionNotFoundError, UsageError
from avatar.core.ids import check_id
from avatar.sessions.types import SessionInfo, Transcript

_Sessions = builtins.list[SessionInfo]  # `list` is also a method name of `SessionStore`


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


_S = TypeVar("_S", bound=_HasId)


def pick_one(ref: str, matches: Sequence[_S], provider: str, *, exact: bool = False) -> _S:
    """The one of `matches` (sessions whose id starts with `ref`) that `ref` names.

    A whole id wins over longer ids it is a prefix of; with `exact`, only a whole id matches.
    Raises `SessionNotFoundError` when none is left, `UsageError` (listing the candidates)
    when several are.
    """
    whole = [s for s in matches if s.id == ref]
    if whole or exact:
        matches = whole
    if not matches:
        raise SessionNotFoundError(f"no {provider} session matches {ref!r}")
    if len(matches) > 1:
        ids = ", ".join(s.id for s in matches[:10])
        more = f" and {len(matches) - 10} more" if len(matches) > 10 else ""
        raise UsageError(f"session id {ref!r} is ambiguous: {ids}{more}")
    return matches[0]


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
        #: How many times this reader walked its store (for tests and benchmarks): a reader
        #: adds one wherever it lists its directories (`list`, or `find` when that walks
        #: on its own).
        self.scans = 0

    def home(self) -> Path:
        """The user's home directory as the provider sees it."""
        return Path(self.env.get("HOME") or Path.home())

    @abstractmethod
    def list(self, cwd: Path | None) -> _Sessions:
        """Sessions started in `cwd` (every session when None), in any order."""

    @abstractmethod
    def transcript(self, session_id: str) -> Transcript:
        """The canonical transcript of one session (full id); SessionNotFoundError if absent."""

    def read_transcript(self, info: SessionInfo) -> Transcript:
        """The transcript of a session this store listed. Stores that can read it straight
        from where it lives (no lookup by id, which the search index would pay per session)
        override this; the others look it up."""
        return self.transcript(info.id)

    def find(self, prefix: str) -> _Sessions:
        """Sessions (any cwd) whose id starts with `prefix`."""
        return [s for s in self.list(None) if s.id.startswith(prefix)]

    def locate(self, ref: str, *, exact: bool = False) -> SessionInfo:
        """The session whose id is `ref`, else the one whose id starts with it (any cwd).

        One `find`, so one walk of the store. With `exact`, only a whole id matches.
        Raises `UsageError` for an invalid id or an ambiguous prefix, `SessionNotFoundError`
        when nothing matches.
        """
        return pick_one(ref, self.find(check_id(ref)), self.provider, exact=exact)

    def delete(self, session_id: str) -> None:
        """Delete a session's files; most stores cannot."""
        raise NotSupportedError(self.provider, "deleting a session")
