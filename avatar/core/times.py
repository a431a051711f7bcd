"""Times as avatar reads and orders them: ISO-8601 parsing and how long ago."""

from __future__ import annotations

from datetime import UTC, datetime


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


def ago(stamp: datetime | None, now: datetime | None = None) -> str:
    """How long before `now` as people read it: `5m ago`, `3h ago`, `2d ago`, `just now`, `-`."""
    if stamp is None:
        return "-"
    seconds = ((now or datetime.now(UTC)) - stamp).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"
