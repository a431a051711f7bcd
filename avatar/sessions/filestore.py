"""The shared skeleton of a store that keeps one JSONL file per session (Claude, Codex, Gemini).

A subclass says where the files are (`session_files`) and how to summarise and read one
(`summarize`, `read_transcript`); this class does the rest the same way for every provider:
stat-keyed caching, the cwd filter, id validation and warnings for skipped files. `FileFold`
is the common part of the providers' one-pass readers of a file.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from avatar.core.collector import collector_paused
from avatar.core.errors import SessionNotFoundError
from avatar.core.fileio import open_regular, regular_file
from avatar.core.ids import UUID_RE, is_valid_id
from avatar.sessions.cache import ListingCache
from avatar.sessions.jsonl import TRANSCRIPT_LINE_CAP, LineStats, iter_records, mtime_utc
from avatar.sessions.store import SessionStore
from avatar.sessions.types import SessionInfo, Transcript, TranscriptMessage


class Summary:
    """What listing learns from one file: the session, or why the file was skipped."""

    __slots__ = ("info", "warnings")

    def __init__(self, info: SessionInfo | None, warnings: list[str] | None = None) -> None:
        self.info = info
        self.warnings = warnings or []

    def to_json(self) -> dict[str, Any]:
        """The cacheable form."""
        info = None
        if self.info is not None:
            info = self.info.to_public()
            info["path"] = self.info.path
        return {"info": info, "warnings": self.warnings}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Summary | None:
        """Back from the cached form; None if the entry is unusable."""
        try:
            raw = data.get("info")
            info = SessionInfo.from_public(raw, raw.get("path")) if raw is not None else None
            warnings = [str(w) for w in data.get("warnings") or []]
        except (ValueError, TypeError, AttributeError, KeyError):
            return None
        return cls(info, warnings)


def same_dir_keys(cwd: Path) -> set[str]:
    """The spellings of a directory a session may have recorded (as given, and resolved)."""
    keys = {os.path.normpath(str(cwd))}
    with contextlib.suppress(OSError):
        keys.add(os.path.realpath(cwd))
    return keys


class JsonlSessionStore(SessionStore):
    """A store with one JSONL file per session, listed through a size/mtime-keyed cache."""

    #: File name of this store's listing cache under `$AVATAR_HOME/cache/`.
    cache_name = "sessions"

    def __init__(self, provider: str, env: Any, avatar_home: Path) -> None:
        super().__init__(provider, env, avatar_home)
        self._cache = ListingCache(
            Path(avatar_home) / "cache" / f"{self.cache_name}.json" if avatar_home else None
        )

    # ----- what a provider supplies ---------------------------------------------------------

    @abstractmethod
    def root(self) -> Path:
        """The directory holding every session file of this provider."""

    @abstractmethod
    def session_files(self, cwd: Path | None) -> Iterable[str]:
        """Paths of candidate session files (for `cwd` when given; a superset is fine).

        Plain strings, not `Path`s: listing handles thousands and pathlib costs add up.
        """

    @abstractmethod
    def summarize(self, path: Path, st: os.stat_result) -> Summary:
        """Read what listing needs from one file (never raising for bad content)."""

    @abstractmethod
    def read_transcript(self, info: SessionInfo) -> Transcript:
        """The canonical transcript of a listed session."""

    def place(self, path: str, info: SessionInfo) -> None:
        """Add what the file's location (not its content, which is cached) says about it."""

    def named_files(self, session_id: str) -> Iterable[str] | None:
        """The files that may hold session `session_id` (a whole UUID), found by their names
        without walking the store, where this format's file names carry the id; None where
        they do not (then a lookup walks the store)."""
        return None

    def annotate(self, sessions: builtins.list[SessionInfo]) -> builtins.list[SessionInfo]:
        """`sessions` with what lies beside their files (a codex thread name) added."""
        return sessions

    # ----- the SessionStore interface ---------------------------------------------------------

    def list(self, cwd: Path | None) -> builtins.list[SessionInfo]:
        """Sessions started in `cwd` (every session when None)."""
        self.scans += 1
        keys = same_dir_keys(cwd) if cwd is not None else None
        out: builtins.list[SessionInfo] = []
        seen: set[str] = set()
        with collector_paused():  # (every summary read stays alive: nothing to collect)
            for path in self.session_files(cwd):
                summary = self._summary(path)
                if summary is None:
                    continue
                self.warn(summary.warnings)
                info = summary.info
                if info is None:
                    continue
                self.place(path, info)
                if keys is not None and (
                    info.cwd is None or os.path.normpath(info.cwd) not in keys
                ):
                    continue
                if info.id in seen:
                    self.warn([f"{path}: duplicate session id {info.id}, skipped"])
                    continue
                seen.add(info.id)
                out.append(info)
        if cwd is None:
            self._cache.prune(str(self.root()))
        self._cache.save()
        return self.annotate(out)

    def find(self, prefix: str) -> builtins.list[SessionInfo]:
        """Sessions (any cwd) whose id starts with `prefix`. A whole UUID, where the file
        names carry it, opens only the files named by it: no walk, no listing cache (at
        10,000 sessions a walk took seconds)."""
        named = self.named_files(prefix) if UUID_RE.fullmatch(prefix) else None
        if named is None:
            return super().find(prefix)
        out: builtins.list[SessionInfo] = []
        for path in named:
            summary = self._summary(path, cached=False)
            if summary is None:
                continue
            self.warn(summary.warnings)
            if summary.info is not None and summary.info.id == prefix:
                self.place(path, summary.info)
                out.append(summary.info)
        return self.annotate(out[:1])

    def transcript(self, session_id: str) -> Transcript:
        """The canonical transcript of one session; SessionNotFoundError if absent."""
        return self.read_transcript(self.locate(session_id, exact=True))

    def listed(self, path: Path | str) -> SessionInfo:
        """The session in file `path` as a listing shows it (read, not found by a walk: a
        file this store has just written); SessionNotFoundError when it holds none."""
        summary = self._summary(str(path))
        info = summary.info if summary is not None else None
        if info is None:
            raise SessionNotFoundError(f"{path} holds no {self.provider} session")
        self.place(str(path), info)
        self._cache.save()
        return info

    # ----- helpers --------------------------------------------------------------------------

    def _summary(self, path: str, *, cached: bool = True) -> Summary | None:
        """The summary of one file: from the listing cache when `cached` and it is there,
        else read (and, when `cached`, kept in the cache)."""
        st, why = regular_file(path)
        if st is None:  # (None and no reason: vanished between listing and stat)
            return Summary(None, [f"{path}: unreadable, skipped ({why})"]) if why else None
        if not cached:
            return self._summarize(path, st)
        entry = self._cache.get(path, st)
        if entry is not None:
            summary = Summary.from_json(entry)
            if summary is not None:
                return summary
        summary = self._summarize(path, st)
        self._cache.put(path, st, summary.to_json())
        return summary

    def _summarize(self, path: str, st: os.stat_result) -> Summary:
        try:
            summary = self.summarize(Path(path), st)
        except OSError as e:
            summary = Summary(None, [f"{path}: unreadable, skipped ({e.strerror or e})"])
        except RecursionError:  # a reader's own json.loads met a `[[[[…` line
            summary = Summary(None, [f"{path}: JSON nested too deeply to read, skipped"])
        if summary.info is not None:
            summary.info.path = path
        return summary


class FileFold(ABC):
    """Walks one session file's records once, for a listing summary (`keep` False: facts and
    counts only) or a whole transcript (`keep` True: `messages` too)."""

    def __init__(self, keep: bool) -> None:
        self.keep = keep
        self.messages: list[TranscriptMessage] = []
        self.count = 0  # user and assistant messages
        self.first_user: str | None = None
        self.cwd: str | None = None
        self.model: str | None = None
        self.created: datetime | None = None
        self.updated: datetime | None = None

    @abstractmethod
    def feed(self, record: dict[str, Any]) -> None:
        """Take one parsed JSONL record."""

    def read(
        self,
        path: Path | str,
        max_line: int,
        want: re.Pattern[bytes] | None = None,
        parse: Callable[[bytes], dict[str, Any] | None] | None = None,
    ) -> LineStats:
        """Feed every record of `path` (see `iter_records`); what was skipped is returned."""
        stats = LineStats()
        with open_regular(path) as f:  # (a FIFO put in its place would hang a plain open)
            for record in iter_records(f, stats, max_line=max_line, want=want, parse=parse):
                self.feed(record)
        return stats

    def info(
        self, session_id: str, provider: str, title: str | None, st: os.stat_result
    ) -> SessionInfo:
        """The listed session (undated files are dated by their modification time)."""
        mtime = mtime_utc(st.st_mtime)
        return SessionInfo(
            id=session_id,
            provider=provider,
            cwd=self.cwd,
            title=title,
            created=self.created or mtime,
            updated=self.updated or mtime,
            messages=self.count,
            model=self.model,
        )


def fold_transcript(info: SessionInfo, fold: FileFold) -> Transcript:
    """Feed every record of a listed session's file to `fold`; broken lines are counted."""
    assert info.path is not None
    try:
        stats = fold.read(info.path, TRANSCRIPT_LINE_CAP)
    except OSError as e:
        raise SessionNotFoundError(f"cannot read session {info.id}: {e.strerror}") from None
    return Transcript(info=info, messages=fold.messages, skipped_lines=stats.skipped)


def unsafe_id(path: Path, session_id: Any) -> Summary | None:
    """A skip (with a warning) when an id read from a file is unsafe: it may later name a file."""
    if isinstance(session_id, str) and is_valid_id(session_id):
        return None
    return Summary(None, [f"{path}: invalid session id {str(session_id)[:80]!r}, skipped"])


def candidate(entry: os.DirEntry[str]) -> bool:
    """Whether a directory entry with a session file's name is worth a look: anything but a
    directory. What cannot be read (a symlink loop, a FIFO) is taken, to be skipped with a
    warning when it is read (`JsonlSessionStore`), never left to fail a listing."""
    try:
        return not entry.is_dir()
    except OSError:
        return True


def listdir(path: Path | str) -> list[os.DirEntry[str]]:
    """The entries of a directory, or nothing when it is missing or unreadable."""
    try:
        with os.scandir(path) as it:
            return list(it)
    except OSError:
        return []
