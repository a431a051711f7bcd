"""What each session was started with (docs/design.md §4): its preset and its own overrides.

A session records the preset it started from and only the settings that differ from it, so a
changed preset reaches old sessions while their own overrides survive. avatar cannot write
into Claude's, Codex's or Gemini's session files, so every provider's records live in one
append-only file, `$AVATAR_HOME/session-settings.jsonl`: one JSON object per line, the last
line for a (provider, id) wins.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from avatar.core.fileio import append_line


@dataclass
class SessionSettings:
    """One line of the file: a session's preset and the settings it set itself."""

    provider: str
    id: str
    preset: str | None = None
    overrides: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, line: bytes | str) -> SessionSettings | None:
        """The record in one JSON line, or None when the line is not one (keys a newer avatar
        may add are ignored)."""
        try:
            data = json.loads(line)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        provider, sid = data.get("provider"), data.get("id")
        preset, overrides = data.get("preset"), data.get("overrides", {})
        if not (isinstance(provider, str) and isinstance(sid, str)):
            return None
        if preset is not None and not isinstance(preset, str):
            return None
        if not isinstance(overrides, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in overrides.items()
        ):
            return None
        return cls(provider=provider, id=sid, preset=preset, overrides=overrides)

    def to_json(self) -> bytes:
        """The record as one JSON line, without its newline."""
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":")).encode()


class SessionSettingsLog:
    """The records of every session, in `$AVATAR_HOME/session-settings.jsonl`."""

    def __init__(self, avatar_home: Path) -> None:
        self.path = Path(avatar_home) / "session-settings.jsonl"

    def get(self, session_id: str) -> SessionSettings | None:
        """The latest record of a session, if any (broken lines are skipped).

        Looked up by id alone: ids are UUIDs or ULIDs, and one session may be reached through
        two providers sharing a store (claude and claude-acp).
        """
        try:
            data = self.path.read_bytes()
        except OSError:
            return None
        needle = json.dumps(session_id).encode()
        for line in reversed(data.splitlines()):
            if needle not in line:  # cheap pre-filter: most lines are other sessions
                continue
            record = SessionSettings.from_json(line)
            if record is not None and record.id == session_id:
                return record
        return None

    def put(self, record: SessionSettings) -> None:
        """Append a record (one write of one line: concurrent runs do not interleave)."""
        # A read-only home: the session still works, it just forgets its settings.
        with contextlib.suppress(OSError):
            append_line(self.path, record.to_json() + b"\n")
