"""Listing ACP sessions: every page of `session/list`, the on-disk readers, the newest one."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.sessions.types import SessionInfo

if TYPE_CHECKING:
    from avatar.sessions.store import SessionStore

PageFetcher = Callable[[str | None], Awaitable[Any]]
"""Fetches one `session/list` page for a cursor (None = the first page)."""


def parse_time(value: str | None) -> datetime | None:
    """An ISO-8601 timestamp as an aware datetime (naive ones taken as UTC); None if unreadable."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def same_dir(path: str, cwd: Path) -> bool:
    """True when `path` names the (resolved) directory `cwd`."""
    try:
        return Path(path).resolve() == cwd
    except (OSError, ValueError):
        return False


def newest(sessions: list[SessionInfo]) -> SessionInfo | None:
    """The most recently updated session (undated ones rank last, in the order given)."""
    if not sessions:
        return None
    floor = datetime.min.replace(tzinfo=UTC)
    return max(
        enumerate(sessions),
        key=lambda pair: (pair[1].updated or pair[1].created or floor, -pair[0]),
    )[1]


async def list_pages(fetch: PageFetcher, provider: str) -> list[SessionInfo]:
    """Every page of `session/list`, following `next_cursor`, as avatar SessionInfo."""
    out: list[SessionInfo] = []
    cursor: str | None = None
    seen: set[str] = set()
    while True:
        resp = await fetch(cursor)
        out.extend(
            SessionInfo(
                id=s.session_id,
                provider=provider,
                cwd=s.cwd,
                title=s.title,
                updated=parse_time(s.updated_at),
            )
            for s in resp.sessions
        )
        cursor = resp.next_cursor
        # A cursor seen before would loop forever; agents have shipped that bug.
        if not cursor or cursor in seen:
            return out
        seen.add(cursor)


def load_store(spec: str, provider: str, env: Mapping[str, str], avatar_home: Path) -> SessionStore:
    """Instantiate a provider's on-disk reader named `module:Class` (ImportError if missing)."""
    module_name, _, attr = spec.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except AttributeError as e:
        raise ImportError(str(e)) from None
    return cls(provider, env, avatar_home)
