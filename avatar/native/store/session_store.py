"""NativeStore: the native sessions as `avatar session list/show/delete` see them.

Listing reads the per-project index (no session file is parsed unless the index is stale),
so 10,000 sessions list in well under the 0.3 s budget. The files themselves are written by
`SessionManager` (docs/design.md §6); this store asks it for a fork at a message, an imported
conversation, a title, a deletion, and says what an archive carries and where it goes back
(the header's `cwd` moves; the index learns the file when it is next read).
"""

from __future__ import annotations

import builtins
import contextlib
from collections import deque
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from avatar.core.errors import AvatarError, SessionNotFoundError, UsageError
from avatar.core.times import parse_time
from avatar.native.store.index import SessionIndex
from avatar.sessions.relocate import check_names, move_key, one_file, placed
from avatar.sessions.store import FileWrites, SessionStore
from avatar.sessions.types import SessionInfo, ToolCall, Transcript, TranscriptMessage


class NativeStore(SessionStore):
    """The native session store under `$AVATAR_HOME/sessions`."""

    kind = "native"
    deletes = True

    def __init__(self, provider: str, env: Mapping[str, str], avatar_home: Path) -> None:
        super().__init__(provider, env, avatar_home)
        # Listing and finding need only the index; the entry models (what `delete` and
        # `transcript` use) are imported when first needed.
        self.index = SessionIndex(avatar_home)

    def list(self, cwd: Path | None) -> builtins.list[SessionInfo]:
        """Sessions started in `cwd` (all when None), in no particular order (callers sort)."""
        self.scans += 1
        records = self.index.list(cwd, newest_first=False)
        self.warn(self.index.warnings)
        return [r.to_info(self.provider) for r in records]

    def session_files(self, cwd: Path | None = None) -> Iterator[str]:
        """Every session file (of every project: `cwd` is accepted for the same call as the
        file-per-session stores, and not used)."""
        return self.index.files()

    def find(self, prefix: str) -> builtins.list[SessionInfo]:
        """Sessions whose id starts with `prefix` (case-insensitive); an exact id reads only
        its own project's index."""
        self.scans += 1
        found = self.index.find(prefix)
        self.warn(self.index.warnings)
        return [r.to_info(self.provider) for r in found]

    def delete(self, info: SessionInfo) -> None:
        """Delete a session file (refused while another process has it open)."""
        from avatar.native.store.manager import SessionManager

        SessionManager(self.avatar_home).delete(info.id)

    def fork_at(self, info: SessionInfo, at: int) -> SessionInfo:
        """The native store's fork, cut after the last entry that leaves `at` messages (its
        header names `parent_id` and `branch_point`)."""
        from avatar.native.store.manager import SessionManager

        cut: str | None = None
        count = 0
        for entry_id, messages in transcript_steps(Path(info.path or ""), []):
            if len(messages) > at:
                break
            cut, count = entry_id, len(messages)
        if count < at or cut is None:
            raise UsageError(f"session {info.id} has {count} messages; --at {at} is past them")
        new_id = SessionManager(self.avatar_home).fork(info.id, at_entry=cut)
        return self.locate(new_id, exact=True)

    def write_import(
        self, conversation: Transcript, cwd: Path, model: str | None = None
    ) -> SessionInfo:
        """A new native session file in project `cwd`, on `model`."""
        from avatar.native.store.entries import MessageEntry
        from avatar.native.store.manager import SessionManager

        manager = SessionManager(self.avatar_home)
        header, writer = manager.create(cwd, model=model)
        try:
            for m in conversation.messages:
                writer.add(MessageEntry(role=m.role, text=m.text))  # type: ignore[arg-type]
        finally:
            writer.close()
        now = datetime.now(UTC)
        info = SessionInfo(
            header.id,
            self.provider,
            cwd=str(cwd),
            created=now,
            updated=now,
            messages=len(conversation.messages),
            model=model,
            path=str(writer.path),
        )
        return self._checked_import(info, conversation, partial(manager.delete, header.id))

    def rename(self, info: SessionInfo, name: str) -> None:
        """A `title` entry in the session file; skipped while another process writes it
        (avatar's record names it meanwhile)."""
        from avatar.native.store.manager import SessionManager
        from avatar.native.store.writer import SessionBusyError

        with contextlib.suppress(SessionBusyError):
            SessionManager(self.avatar_home).set_title(info.id, name)

    def archive_files(self, info: SessionInfo) -> builtins.list[tuple[str, Path]]:
        """The session file, by its name."""
        return one_file(info)

    def restore(
        self, session_id: str, files: Mapping[str, bytes], old_cwd: str | None, new_cwd: str
    ) -> FileWrites:
        """Into the new project's directory, the header's `cwd` moved (the index scans the
        file the next time it is read)."""
        check_names(files, self.kind, session_id, lambda name: name == f"{session_id}.jsonl")
        base = self.index.project_dir(Path(new_cwd))
        fix = partial(_moved_header, old=old_cwd, new=new_cwd)
        return placed(base, files, fix)

    def transcript(self, session_id: str) -> Transcript:
        """The whole conversation, compacted parts included (marked where compacted)."""
        return self.read_transcript(self.locate(session_id, exact=True))

    def read_transcript(self, info: SessionInfo) -> Transcript:
        """The transcript of a listed session, read from its file (no lookup by id)."""
        warnings: builtins.list[str] = []
        messages: builtins.list[TranscriptMessage] = []
        try:
            deque(transcript_steps(Path(info.path or ""), warnings, messages), maxlen=0)
        except AvatarError:
            raise  # (a file of a newer avatar says so)
        except (OSError, ValueError) as e:  # gone since it was listed, or not a session file
            why = e.strerror if isinstance(e, OSError) else e
            raise SessionNotFoundError(f"cannot read session {info.id}: {why}") from None
        self.warnings.extend(warnings)
        return Transcript(info=info, messages=messages, skipped_lines=len(warnings))


def _moved_header(entry: dict[str, Any], old: str | None, new: str) -> bool:
    return entry.get("type") == "session" and move_key(entry, "cwd", old, new)


def transcript_steps(
    path: Path,
    warnings: builtins.list[str],
    messages: builtins.list[TranscriptMessage] | None = None,
) -> Iterator[tuple[str, builtins.list[TranscriptMessage]]]:
    """Fold a session file into transcript messages, yielding after each entry its id and the
    messages so far (one growing list): `session show` numbers these messages, and a fork at
    message N keeps the entries up to the last one that leaves N of them."""
    from avatar.native.store.entries import (
        CompactionEntry,
        MessageEntry,
        SteeringEntry,
        ToolCallEntry,
        ToolResultEntry,
    )
    from avatar.native.store.reading import iter_file

    messages = [] if messages is None else messages
    entries = iter_file(path, warnings)
    next(entries)  # the header
    for entry in entries:
        when = parse_time(getattr(entry, "timestamp", None))
        if isinstance(entry, MessageEntry):
            messages.append(TranscriptMessage(role=entry.role, text=entry.text, timestamp=when))
        elif isinstance(entry, SteeringEntry):
            messages.append(TranscriptMessage(role="user", text=entry.text, timestamp=when))
        elif isinstance(entry, ToolCallEntry):
            if not messages or messages[-1].role != "assistant":
                messages.append(TranscriptMessage(role="assistant", timestamp=when))
            messages[-1].tool_calls.append(
                ToolCall(id=entry.call_id, name=entry.name, input=entry.input)
            )
        elif isinstance(entry, ToolResultEntry):
            messages.append(
                TranscriptMessage(
                    role="tool",
                    text=entry.output,
                    tool_call_id=entry.call_id,
                    is_error=entry.is_error,
                    timestamp=when,
                )
            )
        elif isinstance(entry, CompactionEntry):
            note = entry.summary or "older messages were dropped from the context"
            messages.append(
                TranscriptMessage(role="system", text=f"[compacted] {note}", timestamp=when)
            )
        yield entry.id, messages
