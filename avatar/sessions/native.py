"""NativeStore: the native sessions as `avatar session list/show/delete` see them.

Listing reads the per-project index (no session file is parsed unless the index is stale),
so 10,000 sessions list in well under the 0.3 s budget.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from pathlib import Path

from avatar.native.index import SessionIndex
from avatar.sessions.store import SessionStore
from avatar.sessions.types import SessionInfo, ToolCall, Transcript, TranscriptMessage
from avatar.times import parse_time


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

    def find(self, prefix: str) -> builtins.list[SessionInfo]:
        """Sessions whose id starts with `prefix` (case-insensitive); an exact id reads only
        its own project's index."""
        self.scans += 1
        return [r.to_info(self.provider) for r in self.index.find(prefix)]

    def delete(self, session_id: str) -> None:
        """Delete a session file (refused while another process has it open)."""
        from avatar.native.store import SessionManager

        SessionManager(self.avatar_home).delete(session_id)

    def transcript(self, session_id: str) -> Transcript:
        """The whole conversation, compacted parts included (marked where compacted)."""
        from avatar.native.entries import (
            CompactionEntry,
            MessageEntry,
            SteeringEntry,
            ToolCallEntry,
            ToolResultEntry,
        )
        from avatar.native.store import iter_file

        info = self.locate(session_id, exact=True)
        warnings: builtins.list[str] = []
        messages: builtins.list[TranscriptMessage] = []
        for entry in iter_file(Path(info.path or ""), warnings):
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
        self.warnings.extend(warnings)
        return Transcript(info=info, messages=messages, skipped_lines=len(warnings))
