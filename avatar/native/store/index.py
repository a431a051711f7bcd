"""The per-project index of native sessions (docs/design.md §6): what listing reads.

Layout: `$AVATAR_HOME/sessions/<project-slug>/<id>.jsonl`, one file per session, plus a
per-project `.index.jsonl` cache (one record per line, last record per id wins) so listing
never parses session files. The files are the truth: a record whose file is gone is dropped,
a file without a record (or whose size changed since it was indexed) is scanned and its
record re-appended — so the index heals itself after crashes, races or deletion.

This module imports nothing of the entry models, nor pydantic (`index_record` reads the lines
avatar wrote without it): `avatar session list` stays light.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, cast

from avatar.core.fileio import append_line, atomic_write, open_regular, regular_file
from avatar.core.ids import is_valid_id, sha256_hex
from avatar.sessions.store import pick_one
from avatar.sessions.types import recency

INDEX_NAME = ".index.jsonl"
SUFFIX = ".jsonl"


if TYPE_CHECKING:
    from avatar.native.store.index_record import IndexRecord

    _Records = builtins.list[IndexRecord]  # `list` is also a method name of `SessionIndex`


def project_slug(cwd: Path) -> str:
    """A readable, collision-free directory name for a project: `<name>-<hash of path>`."""
    resolved = str(Path(cwd).resolve())
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(resolved).name).strip("-.") or "root"
    digest = sha256_hex(resolved)[:10]
    return f"{name[:40]}-{digest}"


def _lines(records: Iterable[IndexRecord]) -> bytes:
    return b"".join(r.line() for r in records)


class SessionIndex:
    """Where native sessions live, and the index that lists them without parsing a file."""

    def __init__(self, avatar_home: Path) -> None:
        self.root = Path(avatar_home) / "sessions"
        #: Files skipped because they cannot be read (a symlink loop, a FIFO), one line each.
        self.warnings: list[str] = []

    # -- locations --------------------------------------------------------------------------

    def project_dir(self, cwd: Path) -> Path:
        """The directory holding the sessions started in `cwd`."""
        return self.root / project_slug(cwd)

    def project_dirs(self) -> list[Path]:
        """Every project's directory: the one walk of the whole store that finding a session
        by id, listing every project and reading the forks' lineage start from."""
        try:
            with os.scandir(self.root) as entries:
                return [Path(e.path) for e in entries if _is_dir(e)]
        except OSError:
            return []

    def path_of(self, session_id: str) -> Path | None:
        """The file of session `session_id` (full id), wherever its project is."""
        if not is_valid_id(session_id):
            return None
        for d in self.project_dirs():
            candidate = d / (session_id + SUFFIX)
            if candidate.is_file():
                return candidate
        return None

    def files(self) -> Iterator[str]:
        """The path of every session file, of every project (no file is read)."""
        for d in self.project_dirs():
            with contextlib.suppress(FileNotFoundError), os.scandir(d) as entries:
                for e in entries:
                    if e.name.endswith(SUFFIX) and not e.name.startswith("."):
                        yield e.path

    def exists(self, session_id: str) -> bool:
        """True when a session file with this exact id exists."""
        return self.path_of(session_id) is not None

    # -- index ------------------------------------------------------------------------------

    def update_index(self, path: Path, record: IndexRecord) -> None:
        """Append `record` to the index of the file's project (one small atomic append)."""
        append_line(path.parent / INDEX_NAME, _lines([record]))

    def list(self, cwd: Path | None = None, *, newest_first: bool = True) -> _Records:
        """Sessions of project `cwd` (all projects when None), newest first unless told not."""
        dirs = [self.project_dir(cwd)] if cwd is not None else self.project_dirs()
        records: _Records = []
        for d in dirs:
            records.extend(self._read_dir(d))
        if newest_first:
            records.sort(key=_recency, reverse=True)
        return records

    def _read_dir(self, directory: Path) -> _Records:
        if not directory.is_dir():
            return []  # a project without native sessions: nothing to read or import
        from avatar.native.store.index_record import read_index

        index_path = directory / INDEX_NAME
        known: dict[str, IndexRecord] = {}
        parsed = read_index(index_path)
        lines = len(parsed)
        for line in parsed:
            if line.deleted:
                known.pop(line.id, None)
            else:
                known[line.id] = line
        out: _Records = []
        repaired: _Records = []
        try:
            entries = os.scandir(directory)
        except FileNotFoundError:
            return []
        with entries:
            for e in entries:
                name = e.name
                if not name.endswith(SUFFIX) or name.startswith("."):
                    continue
                sid = name[: -len(SUFFIX)]
                st, why = regular_file(e.path)
                if st is None:  # (no reason: removed since the directory was listed)
                    self._skipped(e.path, why)
                    continue
                size = st.st_size
                record = known.get(sid)
                if record is None or record.size != size:
                    if not self._readable(e.path):
                        continue
                    # Only a stale or unindexed file needs the entry parser, which listing
                    # otherwise never imports.
                    from avatar.native.store.reading import scan_record

                    record = scan_record(Path(e.path), record)
                    if record is None:
                        continue
                    repaired.append(record)
                # Straight into __dict__: pydantic's __setattr__ costs ~3 µs, ×10,000.
                record.__dict__["path"] = e.path
                out.append(record)
        if repaired:
            data = _lines(repaired)
            with contextlib.suppress(OSError):
                append_line(index_path, data)
        if lines > 2 * len(out) + 64:
            self._rewrite_index(index_path, out)
        return out

    def _skipped(self, path: str, why: str | None) -> None:
        line = f"{path}: unreadable, skipped ({why})"
        if why and line not in self.warnings:
            self.warnings.append(line)

    def _readable(self, path: str) -> bool:
        """Can the file be opened to read (it is about to be scanned)? If not, one warning."""
        try:
            open_regular(path).close()
        except OSError as e:
            self._skipped(path, e.strerror or str(e))
            return False
        return True

    def _rewrite_index(self, index_path: Path, records: _Records) -> None:
        # Drop superseded lines. A record appended by another process in between may be lost;
        # that is harmless, the next listing rescans that session's file.
        with contextlib.suppress(OSError):
            atomic_write(index_path, _lines(records))

    def find(self, prefix: str) -> _Records:
        """Sessions (any project) whose id starts with `prefix` (case-insensitive), in one
        walk of the store: an exact id reads only its own project's index."""
        dirs = self.project_dirs()
        if is_valid_id(prefix):
            for d in dirs:
                if (d / (prefix + SUFFIX)).is_file():
                    return [r for r in self._read_dir(d) if r.id == prefix]
        low = prefix.lower()
        found = [r for d in dirs for r in self._read_dir(d) if r.id.lower().startswith(low)]
        found.sort(key=_recency, reverse=True)
        return found

    def resolve(self, id_or_prefix: str) -> IndexRecord:
        """The one session an id or unique prefix names; a usage error otherwise."""
        return pick_one(id_or_prefix, self.find(id_or_prefix), "native")

    def latest(self, cwd: Path) -> IndexRecord | None:
        """The most recently updated session of project `cwd`."""
        records = self.list(cwd)
        return records[0] if records else None


# -- file helpers ----------------------------------------------------------------------------


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False  # (a symlink loop among the project directories)


# `times.recency` reads only `updated`, `created` and `id`, which a record has as a
# `SessionInfo` does (its key is a float per record: comparing aware datetimes directly asks
# their tzinfo for the offset on every comparison, which made sorting 10,000 records slow).
_recency = cast("Callable[[IndexRecord], tuple[float, str]]", recency)
