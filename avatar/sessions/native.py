"""NativeStore: the native sessions as `avatar session list/show/delete` see them.

Listing reads the per-project index (no session file is parsed unless the index is stale),
so 10,000 sessions list in well under the 0.3 s budget.
"""

from __future__ import annotations

import builtins
from collections import deque
from collections.abc import Iterator, Mapping
from pathlib import Path

from avatar.core.times import parse_time
from avatar.native.store.index import SessionIndex
from avatar.sessions.store import SessionStore
from avatar.sessions.types import SessionInfo, ToolCall, Transcript, TranscriptMessage


class NativeStore(SessionStore):
    """Reads the native session store under `$AVATAR_HOME/sessions`."""

    def __init__(self, provider: str, env: Mapping[str, str], avatar_home: Path) -> None:
        super().__init__(provider, env, avatar_home)
        # Listing and finding need only the index; the entry models (what `delete` and
        # `transcript` use) are imported when first needed.
        self.index = SessionIndex(avatar_home)

    def list(self, cwd: Path | None) -> builtins.list[SessionInfo]:
        """Sessions started in `cwd` (all when None), in no particular order (callers sort)."""
        self.scans += 1
        records = self.index.list(cwd, newest_first=False)
        return [r.to_info(self.provider) for r in records]

    def session_files(self, cwd: Path | None = None) -> Iterator[str]:
        """Every session file (of every project: `cwd` is accepted for the same call as the
        file-per-session stores, and not used)."""
        return self.index.files()

    def find(self, prefix: str) -> builtins.list[SessionInfo]:
        """Sessions whose id starts with `prefix` (case-insensitive); an exact id reads only
        its own project's index."""
        self.scans += 1
        return [r.to_info(self.provider) for r in self.index.find(prefix)]

    def delete(self, session_id: str) -> None:
        """Delete a session file (refused while another process has it open)."""
        from avatar.native.store.manager import SessionManager

        SessionManager(self.avatar_home).delete(session_id)

    def transcript(self, session_id: str) -> Transcript:
        """The whole conversation, compacted parts included (marked where compacted)."""
        return self.read_transcript(self.locate(session_id, exact=True))

    def read_transcript(self, info: SessionInfo) -> Transcript:
        """The transcript of a listed session, read from its file (no lookup by id)."""
        warnings: builtins.list[str] = []
        messages: builtins.list[TranscriptMessage] = []
        deque(transcript_steps(Path(info.path or ""), warnings, messages), maxlen=0)
        self.warnings.extend(warnings)
        return Transcript(info=info, messages=messages, skipped_lines=len(warnings))


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
    from avatar.native.store.manager import iter_file

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
