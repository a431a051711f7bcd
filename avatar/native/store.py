"""SessionManager: the native session store of DESIGN §6.

Layout: `$AVATAR_HOME/sessions/<project-slug>/<id>.jsonl`, one file per session, plus a
per-project `.index.jsonl` cache (one record per line, last record per id wins) so listing
never parses session files. The files are the truth: a record whose file is gone is dropped,
a file without a record (or whose size changed since it was indexed) is scanned and its
record re-appended — so the index heals itself after crashes, races or deletion.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import ConfigDict, TypeAdapter

from avatar.errors import SessionNotFoundError, UsageError
from avatar.native.context import SessionState, derive_title
from avatar.native.entries import (
    KNOWN_TYPES,
    Entry,
    MessageEntry,
    ModelChangeEntry,
    SessionHeader,
    SteeringEntry,
    TitleEntry,
    dump,
    entry_parser,
    parse_entry,
    parse_header,
)
from avatar.native.ulid import is_valid_session_id, new_ulid
from avatar.native.writer import SessionBusyError, SessionWriter
from avatar.sessions.types import SessionInfo

INDEX_NAME = ".index.jsonl"
SUFFIX = ".jsonl"


class IndexRecord(SessionInfo):
    """One session as the index knows it: a `SessionInfo` plus bookkeeping.

    Being a `SessionInfo` itself, a record read from the index is handed to `session list`
    as it is — no second object per session (listing 10,000 must stay under 0.3 s).
    """

    model_config = ConfigDict(extra="ignore")

    provider: str = "native"
    parent_id: str | None = None
    size: int = 0  # file size when indexed; a different size means the record is stale
    deleted: bool = False


@dataclass
class LoadedSession:
    """A session read from disk: its path and folded state."""

    path: Path
    state: SessionState


def project_slug(cwd: Path) -> str:
    """A readable, collision-free directory name for a project: `<name>-<hash of path>`."""
    resolved = str(Path(cwd).resolve())
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(resolved).name).strip("-.") or "root"
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:10]
    return f"{name[:40]}-{digest}"


def check_session_id(session_id: str) -> str:
    """`session_id` if it can name a session file; else a usage error."""
    if not is_valid_session_id(session_id):
        raise UsageError(
            f"invalid session id {session_id!r}: use letters, digits, '.', '_' or '-' "
            "(no path separators, not starting with '.')"
        )
    return session_id


class SessionManager:
    """Create, load, list, fork, title and delete native sessions under one data dir."""

    def __init__(self, avatar_home: Path) -> None:
        self.root = Path(avatar_home) / "sessions"

    # -- locations --------------------------------------------------------------------------

    def project_dir(self, cwd: Path) -> Path:
        """The directory holding the sessions started in `cwd`."""
        return self.root / project_slug(cwd)

    def _project_dirs(self) -> list[Path]:
        try:
            return [Path(e.path) for e in os.scandir(self.root) if e.is_dir()]
        except FileNotFoundError:
            return []

    def path_of(self, session_id: str) -> Path | None:
        """The file of session `session_id` (full id), wherever its project is."""
        if not is_valid_session_id(session_id):
            return None
        for d in self._project_dirs():
            candidate = d / (session_id + SUFFIX)
            if candidate.is_file():
                return candidate
        return None

    def exists(self, session_id: str) -> bool:
        """True when a session file with this exact id exists."""
        return self.path_of(session_id) is not None

    # -- create / open ----------------------------------------------------------------------

    def create(
        self,
        cwd: Path,
        *,
        model: str | None,
        session_id: str | None = None,
        provider: str = "native",
        parent_id: str | None = None,
        branch_point: str | None = None,
        preset: str | None = None,
    ) -> tuple[SessionHeader, SessionWriter]:
        """A new session file with its header written; returns the header and its writer."""
        sid = check_session_id(session_id) if session_id else new_ulid()
        if session_id and self.exists(sid):
            raise UsageError(f"session {sid} already exists")
        header = SessionHeader(
            id=sid,
            cwd=str(cwd),
            provider=provider,
            model=model,
            parent_id=parent_id,
            branch_point=branch_point,
            preset=preset,
        )
        directory = self.project_dir(cwd)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / (sid + SUFFIX)
        try:
            writer = SessionWriter(path, header=dump(header))
        except FileExistsError:
            raise UsageError(f"session {sid} already exists") from None
        self.update_index(
            path,
            IndexRecord(
                id=sid,
                cwd=header.cwd,
                created=header.created,
                updated=header.created,
                model=model,
                parent_id=parent_id,
                size=writer.size(),
            ),
        )
        return header, writer

    def open_writer(self, session_id: str) -> SessionWriter:
        """A writer appending to an existing session (exclusive; `SessionBusyError` if taken)."""
        path = self.path_of(session_id)
        if path is None:
            raise SessionNotFoundError(f"no native session {session_id}")
        return SessionWriter(path)

    # -- reading ----------------------------------------------------------------------------

    def load(self, session_id: str) -> LoadedSession:
        """Read a session: its header and the context its entries add up to."""
        path = self.path_of(session_id)
        if path is None:
            raise SessionNotFoundError(f"no native session {session_id}")
        return LoadedSession(path, read_state(path))

    # -- index ------------------------------------------------------------------------------

    def update_index(self, path: Path, record: IndexRecord) -> None:
        """Append `record` to the index of the file's project (one small atomic append)."""
        line = record.model_dump_json(exclude_none=True, exclude={"path"}).encode() + b"\n"
        _append(path.parent / INDEX_NAME, line)

    def list(self, cwd: Path | None = None, *, newest_first: bool = True) -> list[IndexRecord]:
        """Sessions of project `cwd` (all projects when None), newest first unless told not."""
        dirs = [self.project_dir(cwd)] if cwd is not None else self._project_dirs()
        records: list[IndexRecord] = []
        for d in dirs:
            records.extend(self._read_dir(d))
        if newest_first:
            records.sort(key=_updated_key, reverse=True)
        return records

    def _read_dir(self, directory: Path) -> list[IndexRecord]:
        index_path = directory / INDEX_NAME
        known: dict[str, IndexRecord] = {}
        parsed = _read_index(index_path)
        lines = len(parsed)
        for record in parsed:
            if record.deleted:
                known.pop(record.id, None)
            else:
                known[record.id] = record
        out: list[IndexRecord] = []
        repaired: list[IndexRecord] = []
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
                record = known.get(sid)
                try:
                    size = e.stat().st_size
                except FileNotFoundError:
                    continue
                if record is None or record.size != size:
                    fresh = scan_record(Path(e.path), record)
                    if fresh is None:
                        continue
                    record = fresh
                    repaired.append(record)
                # Straight into __dict__: pydantic's __setattr__ costs ~3 µs, ×10,000.
                record.__dict__["path"] = e.path
                out.append(record)
        if repaired:
            data = b"".join(
                r.model_dump_json(exclude_none=True, exclude={"path"}).encode() + b"\n"
                for r in repaired
            )
            with contextlib.suppress(OSError):
                _append(index_path, data)
        if lines > 2 * len(out) + 64:
            self._rewrite_index(index_path, out)
        return out

    def _rewrite_index(self, index_path: Path, records: list[IndexRecord]) -> None:
        # Drop superseded lines. A record appended by another process in between may be lost;
        # that is harmless, the next listing rescans that session's file.
        tmp = index_path.with_name(f"{INDEX_NAME}.{os.getpid()}.tmp")
        data = b"".join(
            r.model_dump_json(exclude_none=True, exclude={"path"}).encode() + b"\n" for r in records
        )
        with contextlib.suppress(OSError):
            tmp.write_bytes(data)
            os.replace(tmp, index_path)

    def find(self, prefix: str) -> list[IndexRecord]:
        """Sessions (any project) whose id starts with `prefix` (case-insensitive)."""
        exact = self.path_of(prefix)
        if exact is not None:
            return [r for r in self._read_dir(exact.parent) if r.id == prefix]
        low = prefix.lower()
        return [r for r in self.list(None) if r.id.lower().startswith(low)]

    def resolve(self, id_or_prefix: str) -> IndexRecord:
        """The one session an id or unique prefix names; a usage error otherwise."""
        matches = self.find(id_or_prefix)
        if not matches:
            raise SessionNotFoundError(f"no native session matches {id_or_prefix!r}")
        if len(matches) > 1:
            ids = ", ".join(r.id for r in matches[:10])
            more = f" and {len(matches) - 10} more" if len(matches) > 10 else ""
            raise UsageError(f"session id {id_or_prefix!r} is ambiguous: {ids}{more}")
        return matches[0]

    def latest(self, cwd: Path) -> IndexRecord | None:
        """The most recently updated session of project `cwd`."""
        records = self.list(cwd)
        return records[0] if records else None

    # -- changes ----------------------------------------------------------------------------

    def delete(self, session_id: str) -> None:
        """Delete a session file for good (refused while another process writes it)."""
        path = self.path_of(session_id)
        if path is None:
            raise SessionNotFoundError(f"no native session {session_id}")
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise SessionBusyError(
                    f"session {session_id} is open in another avatar process"
                ) from None
            path.unlink()
        finally:
            os.close(fd)
        self.update_index(path, IndexRecord(id=session_id, deleted=True))

    def fork(self, session_id: str, cwd: Path | None = None, at_entry: str | None = None) -> str:
        """Copy a session (up to `at_entry`, default all) into a new one; returns its id."""
        source = self.path_of(session_id)
        if source is None:
            raise SessionNotFoundError(f"no native session {session_id}")
        with open(source, "rb") as f:
            header = parse_header(f.readline())
            copied: list[bytes] = []
            last_id: str | None = None
            for line in f:
                try:
                    entry = parse_entry(line)
                except ValueError:
                    continue  # broken or torn: not part of the history
                copied.append(line if line.endswith(b"\n") else line + b"\n")
                last_id = entry.id
                if at_entry is not None and entry.id == at_entry:
                    break
            else:
                if at_entry is not None and last_id != at_entry:
                    raise UsageError(f"session {session_id} has no entry {at_entry}")
        target_cwd = Path(cwd) if cwd is not None else Path(header.cwd)
        new_header, writer = self.create(
            target_cwd,
            model=header.model,
            parent_id=header.id,
            branch_point=last_id,
            preset=header.preset,
        )
        try:
            for line in copied:
                writer.add_line(line)
            writer.sync()
            size = writer.size()
        finally:
            writer.close()
        state = read_state(writer.path)
        self.update_index(writer.path, index_record(state, size))
        return new_header.id

    def set_title(self, session_id: str, title: str, writer: SessionWriter | None = None) -> None:
        """Record a title entry (through `writer` when this process has the session open)."""
        own = writer is None
        if writer is None:
            writer = self.open_writer(session_id)
        try:
            writer.add(TitleEntry(title=title))
            writer.sync()
            state = read_state(writer.path)
            self.update_index(writer.path, index_record(state, writer.size()))
        finally:
            if own:
                writer.close()


# -- file helpers ----------------------------------------------------------------------------


def _updated_key(record: IndexRecord) -> float:
    # A float per record: comparing aware datetimes directly asks their tzinfo for the
    # offset on every comparison, which made sorting 10,000 records take 0.15 s.
    stamp = record.updated or record.created
    return stamp.timestamp() if stamp else 0.0


def _parse_time(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


_records: TypeAdapter[list[IndexRecord]] | None = None


def _read_index(path: Path) -> list[IndexRecord]:
    """Every record of an index file, oldest first; unreadable lines are skipped.

    The whole file is validated as one JSON array (one call into pydantic-core instead of
    one per line); only when that fails is it read line by line.
    """
    global _records
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    lines = [line for line in data.split(b"\n") if line.strip()]
    if not lines:
        return []
    if _records is None:
        _records = TypeAdapter(list[IndexRecord])
    try:
        return _records.validate_json(b"[" + b",".join(lines) + b"]")
    except ValueError:
        pass
    out: list[IndexRecord] = []
    for line in lines:
        try:
            out.append(IndexRecord.model_validate_json(line))
        except ValueError:
            continue  # a torn or foreign line: the files will tell
    return out


def _append(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def iter_file(path: Path, warnings: list[str] | None = None) -> Iterator[SessionHeader | Entry]:
    """The header, then every readable entry; broken, torn or unknown lines are skipped.

    Each skip adds a one-line message to `warnings`. A file whose first line is not a header
    raises ValueError.
    """
    parse = entry_parser()
    with open(path, "rb") as f:
        try:
            yield parse_header(f.readline())
        except ValueError:
            raise ValueError(f"{path}: not a native session file (bad header)") from None
        lineno = 1
        for line in f:
            lineno += 1
            try:
                entry = parse(line)
            except ValueError:
                if warnings is not None:
                    warnings.append(f"{path.name}:{lineno}: {_why_bad(line)}; skipped")
                continue
            yield entry


def _why_bad(line: bytes) -> str:
    import json

    if not line.endswith(b"\n"):
        return "torn last line (interrupted write)"
    try:
        data = json.loads(line)
    except ValueError:
        return "broken line"
    if isinstance(data, dict) and data.get("type") not in (None, *KNOWN_TYPES):
        return f"unknown entry type {data.get('type')!r}"
    return "invalid entry"


def read_state(path: Path) -> SessionState:
    """Fold a session file into its `SessionState` (the resume path).

    The loop is written out (no generator) because it is the cost of resuming a long session.
    """
    parse = entry_parser()
    with open(path, "rb") as f:
        try:
            header = parse_header(f.readline())
        except ValueError:
            raise ValueError(f"{path}: not a native session file (bad header)") from None
        state = SessionState(header)
        apply = state.apply
        lineno = 1
        for line in f:
            lineno += 1
            try:
                entry = parse(line)
            except ValueError:
                state.warnings.append(f"{path.name}:{lineno}: {_why_bad(line)}; skipped")
                continue
            apply(entry)
    return state


def scan_record(path: Path, base: IndexRecord | None = None) -> IndexRecord | None:
    """Rebuild an index record from a file; with `base`, read only what was appended since.

    Returns None when the file is not a session file.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if base is not None and 0 < base.size < size:
        record = base.model_copy()
        try:
            with open(path, "rb") as f:
                f.seek(base.size)
                _fold_tail(record, f)
        except OSError:
            return None
        record.size = size
        return record
    try:
        state = read_state(path)
    except (OSError, ValueError, StopIteration):
        return None
    return index_record(state, size)


def index_record(state: SessionState, size: int) -> IndexRecord:
    """The index record describing a session state at file size `size`."""
    return IndexRecord(
        id=state.header.id,
        cwd=state.header.cwd,
        title=state.display_title,
        created=state.header.created,
        updated=state.updated,
        messages=state.message_count,
        model=state.model,
        parent_id=state.header.parent_id,
        size=size,
    )


def _fold_tail(record: IndexRecord, f: object) -> None:
    for line in f:  # type: ignore[attr-defined]
        if not line.endswith(b"\n"):
            break
        try:
            entry = parse_entry(line)
        except ValueError:
            continue
        record.updated = _parse_time(entry.timestamp)
        if isinstance(entry, MessageEntry):
            record.messages += 1
            if entry.role == "user" and not record.title:
                record.title = derive_title(entry.text)
            if entry.model:
                record.model = entry.model
        elif isinstance(entry, SteeringEntry):
            record.messages += 1
        elif isinstance(entry, ModelChangeEntry):
            record.model = entry.model
        elif isinstance(entry, TitleEntry):
            record.title = entry.title
