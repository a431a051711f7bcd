"""Naming a session (`avatar session rename`, REPL `/rename`), written where its provider shows it.

- Claude Code (claude, claude-acp): the `custom-title` entry Claude Code's own `/rename`
  appends to the transcript, so `claude --resume` lists the name too.
- codex: a `thread_name` line in `$CODEX_HOME/session_index.jsonl`, where codex keeps the
  names its own `/rename` gives.
- native: a `title` entry in the session file (skipped while another process writes it).
- Gemini CLI and other ACP agents: nothing of theirs (ACP has no rename request), so avatar's
  own record carries the name.

Avatar's record gets the name in every case: `session list`, the picker and search show it
for any provider, and a name the provider's own files hold later (a rename inside Claude
Code) still wins over it.
"""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.core.errors import UsageError
from avatar.core.fileio import append_line

if TYPE_CHECKING:
    from avatar.library.catalog import SessionLibrary
    from avatar.sessions.types import SessionInfo

NAME_CHARS = 200


def clean_name(name: str) -> str:
    """`name` on one line; a usage error when empty or too long."""
    text = " ".join(name.split())
    if not text:
        raise UsageError("the name is empty")
    if len(text) > NAME_CHARS:
        raise UsageError(f"the name is longer than {NAME_CHARS} characters")
    return text


def _line(record: dict[str, str]) -> bytes:
    # Compact, as the agents write their own JSONL.
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def rename(library: SessionLibrary, info: SessionInfo, name: str) -> SessionInfo:
    """Give session `info` the name `name`; returns the session as now named."""
    from avatar.sessions.claude import ClaudeStore
    from avatar.sessions.codex import CodexStore, codex_home
    from avatar.sessions.native import NativeStore

    name = clean_name(name)
    store = library.store(info.provider)
    if isinstance(store, ClaudeStore) and info.path:
        path = Path(info.path)
        if path.parent.parent != store.root():  # only ever a transcript the store listed
            raise UsageError(f"{info.id} is not in Claude Code's store")
        entry = {"type": "custom-title", "customTitle": name, "sessionId": info.id}
        append_line(path, _line(entry), mode=0o600)
    elif isinstance(store, CodexStore):
        stamp = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        index = codex_home(store.env, store.home()) / "session_index.jsonl"
        append_line(index, _line({"id": info.id, "thread_name": name, "updated_at": stamp}))
    elif isinstance(store, NativeStore):
        from avatar.native.store.manager import SessionManager
        from avatar.native.store.writer import SessionBusyError

        # Open in a running avatar: the record below names it meanwhile.
        with contextlib.suppress(SessionBusyError):
            SessionManager(library.avatar_home).set_title(info.id, name)
    library.records().name(info.provider, info.id, name)
    info.name = name
    return info
