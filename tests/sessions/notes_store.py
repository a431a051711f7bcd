"""A store kind avatar does not ship, written as a new one would be: this one file, plus the
`store = "tests.sessions.notes_store:NotesStore"` of its provider's data. A session is
`$AVATAR_HOME/notes/<hash of cwd>/<id>.jsonl`: a header line naming the project directory,
then a line per message (`role`, `text`) or name (`name`)."""

from __future__ import annotations

import builtins
import json
import uuid
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from avatar.core.errors import UsageError
from avatar.core.ids import sha256_hex
from avatar.sessions.relocate import check_names, move_key, one_file, placed
from avatar.sessions.store import FileWrites, SessionStore
from avatar.sessions.types import SessionInfo, Transcript, TranscriptMessage


class NotesStore(SessionStore):
    """Sessions kept as notes."""

    kind = "notes"

    def _dir(self, cwd: str) -> Path:
        return self.avatar_home / "notes" / sha256_hex(cwd)[:12]

    def _lines(self, path: Path) -> builtins.list[dict[str, Any]]:
        return [json.loads(line) for line in path.read_text().splitlines()]

    def list(self, cwd: Path | None) -> builtins.list[SessionInfo]:
        """Every session of `cwd` (all when None)."""
        self.scans += 1
        out = []
        for path in sorted((self.avatar_home / "notes").glob("*/*.jsonl")):
            lines = self._lines(path)
            said = [x for x in lines if "role" in x]
            names = [x["name"] for x in lines if "name" in x]
            info = SessionInfo(
                path.stem,
                self.provider,
                cwd=lines[0]["cwd"],
                title=said[0]["text"] if said else None,
                messages=len(said),
                name=names[-1] if names else None,
                path=str(path),
            )
            if cwd is None or info.cwd == str(cwd):
                out.append(info)
        return out

    def transcript(self, session_id: str) -> Transcript:
        """The messages of one session."""
        return self.read_transcript(self.locate(session_id, exact=True))

    def read_transcript(self, info: SessionInfo) -> Transcript:
        """The messages of a listed session, from its file."""
        lines = self._lines(Path(info.path or ""))
        said = [TranscriptMessage(role=x["role"], text=x["text"]) for x in lines if "role" in x]
        return Transcript(info=info, messages=said)

    def _write(self, cwd: str, messages: builtins.list[TranscriptMessage]) -> SessionInfo:
        path = self._dir(cwd) / f"{uuid.uuid4()}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [{"cwd": cwd}] + [{"role": m.role, "text": m.text} for m in messages]
        path.write_text("".join(json.dumps(x) + "\n" for x in lines))
        return self.locate(path.stem, exact=True)

    def fork_at(self, info: SessionInfo, at: int) -> SessionInfo:
        """A new file with the first `at` messages."""
        messages = self.read_transcript(info).messages
        if len(messages) < at:
            raise UsageError(f"the session has {len(messages)} messages; --at {at} is past them")
        return self._write(info.cwd or "", messages[:at])

    def write_import(
        self, conversation: Transcript, cwd: Path, model: str | None = None
    ) -> SessionInfo:
        """A new file holding the conversation."""
        info = self._write(str(cwd), conversation.messages)
        return self._checked_import(info, conversation, Path(info.path or "").unlink)

    def rename(self, info: SessionInfo, name: str) -> None:
        """A name line."""
        with open(info.path or "", "a") as f:
            f.write(json.dumps({"name": name}) + "\n")

    def delete(self, info: SessionInfo) -> None:
        """The file goes."""
        Path(info.path or "").unlink()

    def archive_files(self, info: SessionInfo) -> builtins.list[tuple[str, Path]]:
        """The one file."""
        return one_file(info)

    def restore(
        self, session_id: str, files: Mapping[str, bytes], old_cwd: str | None, new_cwd: str
    ) -> FileWrites:
        """Into the new project's directory, the header moved."""
        check_names(files, self.kind, session_id, lambda name: name == f"{session_id}.jsonl")
        fix = partial(move_key, key="cwd", old=old_cwd, new=new_cwd)
        return placed(self._dir(new_cwd), files, fix)
