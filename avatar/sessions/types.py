"""What avatar knows about a session, whichever provider owns it."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from avatar.core.times import parse_time
from avatar.sessions.handoff_marker import strip_handoff

if TYPE_CHECKING:
    from avatar.policy.secrets import SecretDetector

#: The blocks of context agents put in a user message themselves (Gemini CLI's).
_INJECTED = re.compile(r"<(session_context|hook_context)>.*?(</\1>|\Z)", re.S)


@dataclass(slots=True)
class SessionInfo:
    """One session as listed by `avatar session list` (times are timezone-aware UTC).

    A plain dataclass: readers build it from data they have already checked, by the
    thousand per listing, and its only way out is `to_public()`.
    """

    id: str
    provider: str
    cwd: str | None = None
    title: str | None = None
    created: datetime | None = None
    updated: datetime | None = None
    messages: int = 0
    model: str | None = None
    path: str | None = None  # where it lives on disk, if anywhere (not part of `to_public`)
    name: str | None = None  # a name the user gave it (`session rename`)
    #: Its provider's files are gone: what is listed is avatar's record and copy of it.
    gone: bool = False
    worktree: str | None = None  # the avatar git worktree it runs in (`--worktree`)

    def to_public(self) -> dict[str, Any]:
        """The object `session list --json` prints (docs/design.md §3), times in ISO-8601."""
        return (
            {
                "id": self.id,
                "provider": self.provider,
                "title": self.title,
                "cwd": self.cwd,
                "created": self.created.isoformat() if self.created else None,
                "updated": self.updated.isoformat() if self.updated else None,
                "messages": self.messages,
                "model": self.model,
            }
            | ({"name": self.name} if self.name else {})
            | ({"files_gone": True} if self.gone else {})
            | ({"worktree": self.worktree} if self.worktree else {})
        )

    @classmethod
    def from_public(cls, data: dict[str, Any], path: str | None = None) -> SessionInfo:
        """Back from `to_public()` output (the listing cache), checking every field's type.

        Raises `ValueError`, `TypeError` or `KeyError` on an entry of the wrong shape.
        """
        messages = data["messages"]
        if type(messages) is not int:
            raise TypeError("messages")
        return cls(
            id=_text(data["id"]),
            provider=_text(data["provider"]),
            cwd=_opt_text(data.get("cwd")),
            title=_opt_text(data.get("title")),
            created=_opt_time(data.get("created")),
            updated=_opt_time(data.get("updated")),
            messages=messages,
            model=_opt_text(data.get("model")),
            path=_opt_text(path),
            name=_opt_text(data.get("name")),
            worktree=_opt_text(data.get("worktree")),
        )


def _text(value: Any) -> str:
    if type(value) is not str:
        raise TypeError("expected a string")
    return value


def _opt_text(value: Any) -> str | None:
    return None if value is None else _text(value)


def _opt_time(value: Any) -> datetime | None:
    # Strict, unlike `parse_time` alone: a cache entry with an unreadable time is a broken
    # entry (the caller recomputes it from the file), not a session without that time.
    if value is None:
        return None
    stamp = parse_time(value)
    if stamp is None:
        raise ValueError(f"not a time: {value!r}")
    return stamp


@dataclass(slots=True)
class ToolCall:
    """A tool call inside a transcript message."""

    name: str
    id: str | None = None
    input: dict[str, Any] | str | None = None


@dataclass(slots=True)
class TranscriptMessage:
    """One message of a canonical transcript (used by `session show` and provider handoffs)."""

    role: Literal["user", "assistant", "tool", "system"]
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None  # for role "tool": the call this result answers
    is_error: bool = False
    timestamp: datetime | None = None

    @property
    def said(self) -> str:
        """What the user typed, of a user message: without handed-over context (a handoff's
        fenced block) and the context agents add themselves (Gemini's `<session_context>`);
        empty for a message that was all context."""
        text = strip_handoff(self.text)
        return _INJECTED.sub("", text).strip() if "_context>" in text else text.strip()


@dataclass(slots=True)
class Transcript:
    """A session's conversation, in provider-neutral form."""

    info: SessionInfo
    messages: list[TranscriptMessage] = field(default_factory=list)
    skipped_lines: int = 0  # unknown or broken lines the reader ignored

    def masked(self, secrets: SecretDetector) -> Transcript:
        """This conversation with every secret masked, in the messages' text and the tool
        calls' input: what anything that cuts or condenses it (a handoff) starts from, so
        no secret is cut in two with a piece of it left showing."""
        return replace(
            self,
            messages=[
                replace(
                    m,
                    text=secrets.mask(m.text),
                    tool_calls=[replace(c, input=secrets.mask_data(c.input)) for c in m.tool_calls],
                )
                for m in self.messages
            ],
        )


def recency(info: SessionInfo) -> tuple[float, str]:
    """Sort key, newest last: last update (else creation; undated sessions first), then id."""
    stamp = info.updated or info.created
    return (stamp.timestamp() if stamp else 0.0, info.id)


def newest_first(sessions: Iterable[SessionInfo]) -> list[SessionInfo]:
    """`sessions` ordered newest first (ties broken by id, so the order is stable)."""
    return sorted(sessions, key=recency, reverse=True)


def newest(sessions: Iterable[SessionInfo]) -> SessionInfo | None:
    """The most recently updated session, or None."""
    return max(sessions, key=recency, default=None)
