"""SessionManager: the native session store of docs/design.md §6 — creating, reading, forking and
deleting session files. Where they live and how they are listed is `avatar.native.store.index`.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from avatar.core.errors import SessionNotFoundError, UsageError
from avatar.core.ids import check_id
from avatar.core.times import parse_time
from avatar.native.agent.context import SessionState
from avatar.native.store.entries import (
    SessionHeader,
    TitleEntry,
)
from avatar.native.store.index import SUFFIX, SessionIndex
from avatar.native.store.index_record import IndexRecord
from avatar.native.store.reading import file_header, index_record, read_state
from avatar.native.store.ulid import new_ulid
from avatar.native.store.versions import migrate_line, parser_for
from avatar.native.store.writer import SessionBusyError, SessionWriter, model_line


@dataclass
class LoadedSession:
    """A session read from disk: its path and folded state."""

    path: Path
    state: SessionState


def check_session_id(session_id: str) -> str:
    """`session_id` if it can name a session file (the one id syntax of `avatar.core.ids`); else a
    usage error saying what an id may hold (a native id is often one the user made up)."""
    return check_id(session_id, explain=True)


class SessionManager(SessionIndex):
    """Create, load, list, fork, title and delete native sessions under one data dir."""

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
            writer = SessionWriter(path, header=model_line(header))
        except FileExistsError:
            raise UsageError(f"session {sid} already exists") from None
        created = parse_time(header.created)
        self.update_index(
            path,
            IndexRecord(
                id=sid,
                cwd=header.cwd,
                created=created,
                updated=created,
                model=model,
                parent_id=parent_id,
                size=writer.size(),
            ),
        )
        return header, writer

    def open_writer(self, session_id: str, path: Path | None = None) -> SessionWriter:
        """A writer appending to an existing session, whose file is `path` (looked up when not
        given); exclusive: `SessionBusyError` while another process has it."""
        path = path or self.path_of(session_id)
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
            header, version = file_header(source, f)
            parse = parser_for(version)
            copied: list[bytes] = []
            last_id: str | None = None
            for line in f:
                try:
                    entry = parse(line)
                    line = migrate_line(line, version)  # the copy is in the current format
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
