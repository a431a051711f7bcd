"""A `SessionStore` over the fake ACP agent's state dir, standing in for a provider's
on-disk reader (Gemini's) in the continue-last tests."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from avatar.core.errors import SessionNotFoundError
from avatar.sessions.store import SessionStore
from avatar.sessions.types import SessionInfo, Transcript


class FakeStore(SessionStore):
    """Lists the sessions the fake agent wrote under `$FAKE_ACP_STATE/sessions`."""

    def _root(self) -> Path:
        return Path(self.env["FAKE_ACP_STATE"]) / "sessions"

    def list(self, cwd: Path | None) -> list[SessionInfo]:
        out = []
        for path in self._root().glob("*.json"):
            data = json.loads(path.read_text())
            if cwd is not None and Path(data["cwd"]) != cwd:
                continue
            out.append(
                SessionInfo(
                    id=data["id"],
                    provider=self.provider,
                    cwd=data["cwd"],
                    title=data.get("title"),
                    updated=datetime.fromisoformat(data["updated_at"]),
                    messages=len(data["history"]),
                    path=str(path),
                )
            )
        return out

    def transcript(self, session_id: str) -> Transcript:
        for info in self.list(None):
            if info.id == session_id:
                return Transcript(info=info)
        raise SessionNotFoundError(session_id)
