"""Where each ACP session of `avatar acp` is now: `$AVATAR_HOME/acp/sessions.jsonl`, one line
`{"acp": ID, "provider": NAME, "session": ID}` each time the agent's session under an ACP
session changes (the last line of an id wins; docs/design.md §9, §12).

An ACP session keeps the id the client knows while avatar moves it between agents' sessions
(a provider switch, a fork, a session an agent could not reopen and avatar reopened as a new
one with its turns): loading that id again, in a later run, opens where it went, not where it
began. Only avatar acp writes here, through the records' one-line append (`core/fileio.py`:
a torn line is ended before the next); a line that does not parse is skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

from avatar.core.fileio import append_line


class Threads:
    """The file of where ACP sessions went (see the module docstring)."""

    def __init__(self, home: Path) -> None:
        self.path = home / "acp" / "sessions.jsonl"

    def where(self, acp_id: str) -> tuple[str, str] | None:
        """The (provider, session id) ACP session `acp_id` went on in last; None when it
        never moved."""
        found = None
        try:
            with self.path.open(encoding="utf-8") as lines:
                for line in lines:
                    try:
                        entry = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(entry, dict) and entry.get("acp") == acp_id:
                        provider, sid = entry.get("provider"), entry.get("session")
                        if isinstance(provider, str) and isinstance(sid, str):
                            found = (provider, sid)
        except OSError:
            return None
        return found

    def moved(self, acp_id: str, provider: str, session_id: str) -> None:
        """ACP session `acp_id` goes on in `provider`'s session `session_id` now."""
        line = json.dumps({"acp": acp_id, "provider": provider, "session": session_id}) + "\n"
        append_line(self.path, line.encode())  # (whole, whatever runs append beside it)
