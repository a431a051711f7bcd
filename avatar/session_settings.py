"""What each session was started with (DESIGN §4): its preset and its own overrides.

A session records the preset it started from and only the settings that differ from it, so a
changed preset reaches old sessions while their own overrides survive. avatar cannot write
into Claude's, Codex's or Gemini's session files, so every provider's records live in one
append-only file, `$AVATAR_HOME/session-settings.jsonl`: one JSON object per line, the last
line for a (provider, id) wins. Resuming a session applies, in order: the config as it is now,
the session's preset as the config defines it now, the session's overrides, this run's flags.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

if TYPE_CHECKING:
    from avatar.config import Settings

#: The settings a run can give on its command line (or in the REPL) and a session keeps.
OVERRIDABLE = ("model", "permission", "system_prompt")


class SessionSettings(BaseModel):
    """One line of the file: a session's preset and the settings it set itself."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    provider: str
    id: str
    preset: str | None = None
    overrides: dict[str, str] = {}


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
            try:
                record = SessionSettings.model_validate_json(line)
            except ValidationError:
                continue
            if record.id == session_id:
                return record
        return None

    def put(self, record: SessionSettings) -> None:
        """Append a record (one write of one line: concurrent runs do not interleave)."""
        line = record.model_dump_json().encode() + b"\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError:
            pass  # a read-only home: the session still works, it just forgets its settings


@dataclass
class SettingsSource:
    """How this run's settings were made, so a resumed session can get its own instead.

    `flags` are the overridable settings given on the command line, `preset_given` whether
    `--preset` was, and `load(preset, overrides)` builds settings from the config files as
    they are now with that preset and those overrides laid over them.
    """

    load: Callable[[str | None, Mapping[str, Any]], Settings]
    flags: dict[str, Any] = field(default_factory=dict)
    preset_given: bool = False

    def given(self) -> dict[str, Any]:
        """The overridable flags this run was given."""
        return {k: v for k, v in self.flags.items() if k in OVERRIDABLE and v is not None}


def overrides_of(settings: Settings, base: Settings) -> dict[str, str]:
    """The overridable settings in which `settings` differs from `base` (its preset's)."""
    out: dict[str, str] = {}
    for key in OVERRIDABLE:
        value = getattr(settings, key)
        if value is not None and value != getattr(base, key):
            out[key] = str(value)
    return out
