"""What avatar knows about a session, whichever provider owns it."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field


class SessionInfo(BaseModel):
    """One session as listed by `avatar session list` (times are timezone-aware UTC)."""

    id: str
    provider: str
    cwd: str | None = None
    title: str | None = None
    created: datetime | None = None
    updated: datetime | None = None
    messages: int = 0
    model: str | None = None
    path: str | None = Field(default=None, exclude=True)  # where it lives on disk, if anywhere

    def to_public(self) -> dict[str, Any]:
        """The object `session list --json` prints (DESIGN §3), times in ISO-8601."""
        return {
            "id": self.id,
            "provider": self.provider,
            "title": self.title,
            "cwd": self.cwd,
            "created": self.created.isoformat() if self.created else None,
            "updated": self.updated.isoformat() if self.updated else None,
            "messages": self.messages,
            "model": self.model,
        }


class ToolCall(BaseModel):
    """A tool call inside a transcript message."""

    id: str | None = None
    name: str
    input: dict[str, Any] | str | None = None


class TranscriptMessage(BaseModel):
    """One message of a canonical transcript (used by `session show` and provider handoffs)."""

    role: Literal["user", "assistant", "tool", "system"]
    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None  # for role "tool": the call this result answers
    is_error: bool = False
    timestamp: datetime | None = None


class Transcript(BaseModel):
    """A session's conversation, in provider-neutral form."""

    info: SessionInfo
    messages: list[TranscriptMessage] = Field(default_factory=list)
    skipped_lines: int = 0  # unknown or broken lines the reader ignored
