"""Finding the session to continue: every page of `session/list`, else the on-disk reader.

Listing for users goes through the engine's stores; the bridge lists only to continue the
newest session of its cwd (docs/design.md §2).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.bridges.acp.jsonrpc import RpcError, WrongAnswer
from avatar.core.times import parse_time
from avatar.sessions.types import SessionInfo, newest

if TYPE_CHECKING:
    from avatar.sessions.store import SessionStore

PageFetcher = Callable[[str | None], Awaitable[Any]]
"""Fetches one `session/list` page for a cursor (None = the first page)."""


def same_dir(path: str, cwd: Path) -> bool:
    """True when `path` names the (resolved) directory `cwd`."""
    try:
        return Path(path).resolve() == cwd
    except (OSError, ValueError):
        return False


def _listed(item: Any, provider: str) -> SessionInfo:
    """One session of a `session/list` page (a `WrongAnswer` without its id or cwd, which
    the protocol requires)."""
    sid, cwd = (item.get(k) if isinstance(item, dict) else None for k in ("sessionId", "cwd"))
    if not (isinstance(sid, str) and isinstance(cwd, str)):
        raise WrongAnswer("session/list answered a session without its sessionId or cwd")
    title = item.get("title")
    return SessionInfo(
        id=sid,
        provider=provider,
        cwd=cwd,
        title=title if isinstance(title, str) else None,
        updated=parse_time(item.get("updatedAt")),
    )


async def list_pages(fetch: PageFetcher, provider: str) -> list[SessionInfo]:
    """Every page of `session/list`, following `nextCursor`, as avatar SessionInfo (a
    `WrongAnswer` for a page that is not one)."""
    out: list[SessionInfo] = []
    cursor: str | None = None
    seen: set[str] = set()
    while True:
        resp = await fetch(cursor)
        sessions = resp.get("sessions") if isinstance(resp, dict) else None
        if not isinstance(sessions, list):
            raise WrongAnswer("session/list answered no list of sessions")
        out.extend(_listed(item, provider) for item in sessions)
        cursor = resp.get("nextCursor")
        cursor = cursor if isinstance(cursor, str) else None
        # A cursor seen before would loop forever; agents have shipped that bug.
        if not cursor or cursor in seen:
            return out
        seen.add(cursor)


async def newest_in(
    provider: str,
    cwd: Path,
    fetch: PageFetcher | None,
    store: SessionStore | None,
) -> tuple[SessionInfo | None, list[str]]:
    """The newest session in `cwd` (resolved), and why there is none when there is none.

    `fetch` is `session/list` (None when the agent cannot list); when it is missing or fails,
    the provider's store (the engine's reader, None when there is none) lists instead.
    """
    from avatar.bridges.acp.connection import describe_error

    failures: list[str] = []
    sessions: list[SessionInfo] | None = None
    if fetch is not None:
        try:
            sessions = await list_pages(fetch, provider)
        except (RpcError, WrongAnswer) as e:
            failures.append(f"session/list failed: {describe_error(e)}")
    if sessions is None and store is not None:
        # Readers parse files synchronously; keep the event loop (and the agent's pipes) moving.
        sessions = await asyncio.to_thread(store.list, cwd)
    if sessions is None:
        if not failures:
            failures.append(f"{provider} cannot list its sessions")
        return None, failures
    # Agents filter by cwd themselves, but not all of them reliably.
    latest = newest(s for s in sessions if s.cwd is None or same_dir(s.cwd, cwd))
    if latest is None:
        failures.append(f"no earlier {provider} session in {cwd}")
    return latest, failures
