"""The interface every session store implements (no process is ever spawned).

A store owns its provider's whole file format: reading (`list`, `transcript`), and the
optional operations every caller asks through this contract, never by the store's class:
`fork_at`, `write_import`, `rename`, `delete`, `archive_files` and `restore`. Each defaults
to a `NotSupportedError` naming the provider; a store that can do it overrides it.
"""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import ClassVar, Protocol, TypeVar

from avatar.core.errors import AvatarError, NotSupportedError, SessionNotFoundError, UsageError
from avatar.core.ids import check_id
from avatar.sessions.types import SessionInfo, Transcript

_Sessions = builtins.list[SessionInfo]  # `list` is also a method name of `SessionStore`

#: Files to write, each with its content: what `SessionStore.restore` plans (the caller
#: writes them all, or none).
FileWrites = builtins.list[tuple[Path, bytes]]


class ImportCheckError(AvatarError):
    """A conversation written into a store (`SessionStore.write_import`) did not read back
    whole; what was written is removed again."""


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

    #: The name of this store's file format in an archive's manifest (`kind`): an archive is
    #: restored only into a store of the same kind. Set by every store that archives.
    kind: ClassVar[str] = ""
    #: The store deletes sessions (`delete`) the way its provider would.
    deletes: ClassVar[bool] = False

    def __init__(self, provider: str, env: Mapping[str, str], avatar_home: Path) -> None:
        self.provider = provider
        self.env = env
        self.avatar_home = avatar_home
        self.warnings: list[str] = []
        #: How many times this reader walked its store (for tests and benchmarks): a reader
        #: adds one wherever it lists its directories (`list`, or `find` when that walks
        #: on its own).
        self.scans = 0

    def warn(self, lines: list[str]) -> None:
        """Add what was skipped to `warnings`, each line once (listing twice in one run, to
        find and then to read, must not repeat one)."""
        for line in lines:
            if line not in self.warnings:
                self.warnings.append(line)

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

    def session_files(self, cwd: Path | None) -> Iterable[str] | None:
        """The path of each session file (of `cwd`'s sessions when given; a superset is
        fine), found without reading any; None for a store whose listing is cheap enough to
        ask instead (a search index compares these files' stamps to know what changed)."""
        return None

    # ----- optional operations: each defaults to "not supported on PROVIDER" -----------------

    def fork_at(self, info: SessionInfo, at: int) -> SessionInfo:
        """Write a new session holding messages 1..`at` (`at` >= 1, numbered as `session
        show` numbers them) of session `info`, which this store listed; the new session as
        listed. The parent's files are not touched; a cut past the last message is a
        `UsageError` saying how many there are."""
        raise NotSupportedError(self.provider, "forking at a message")

    def write_import(
        self, conversation: Transcript, cwd: Path, model: str | None = None
    ) -> SessionInfo:
        """Write `conversation` (user and assistant messages of plain text, alternating, as
        `avatar.handoff.importing` flattens another provider's session) as a new session of
        this store's own format in project `cwd`, so the provider's own resume opens it with
        the earlier turns as real messages; `model` is the one it will run on, when known.
        Returns the new session as listed, after reading it back (`ImportCheckError`, and
        nothing left written, when it does not read back whole)."""
        raise NotSupportedError(self.provider, "importing a conversation")

    def rename(self, info: SessionInfo, name: str) -> None:
        """Write name `name` (one checked line) where the provider itself shows names."""
        raise NotSupportedError(self.provider, "naming a session")

    def delete(self, info: SessionInfo) -> None:
        """Delete the files of session `info`, which this store listed."""
        raise NotSupportedError(self.provider, "deleting a session")

    def archive_files(self, info: SessionInfo) -> builtins.list[tuple[str, Path]]:
        """`(name, file)` for every file of session `info` an archive carries: `name` is
        where it goes in the archive (under `session/`), as `restore` expects it back."""
        raise NotSupportedError(self.provider, "archiving a session")

    def restore(
        self, session_id: str, files: Mapping[str, bytes], old_cwd: str | None, new_cwd: str
    ) -> FileWrites:
        """Where each archived file of session `session_id` (`files`, by the names
        `archive_files` gave) goes so that the provider running in project `new_cwd` finds
        and resumes it, its content rewritten from `old_cwd` to `new_cwd`. Nothing is
        written here: the caller writes all the files or none. A `UsageError` for a name
        this store would not have given a file of that session."""
        raise NotSupportedError(self.provider, "restoring a session")

    def _checked_import(
        self, info: SessionInfo, conversation: Transcript, undo: Callable[[], None]
    ) -> SessionInfo:
        """`info`, a session `write_import` just wrote, once it reads back as exactly the
        messages of `conversation`; else `undo()` and an `ImportCheckError`."""
        wanted = [(m.role, m.text) for m in conversation.messages]
        try:
            got = [(m.role, m.text) for m in self.read_transcript(info).messages]
        except AvatarError:
            got = None
        if got != wanted:
            undo()
            raise ImportCheckError(
                f"the imported {self.provider} session {info.id} did not read back whole"
            )
        return info
