"""Times as avatar reads and orders them: ISO-8601 parsing and the recency of sessions."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from avatar.sessions.types import SessionInfo


def parse_time(value: object) -> datetime | None:
    """An ISO-8601 timestamp as an aware datetime (`Z` accepted, naive taken as UTC).

    None for anything that is not such a string, so readers of foreign files never raise.
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


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


def ago(stamp: datetime | None, now: datetime | None = None) -> str:
    """How long before `now` as people read it: `5m ago`, `3h ago`, `2d ago`, `just now`, `-`."""
    if stamp is None:
        return "-"
    seconds = ((now or datetime.now(UTC)) - stamp).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"
