"""The web server's hold on the sessions it opens, and what a session it opened leaves behind.

The server holds every session a page opened as client `HOLDER`: the session stays live, and
its permission questions wait for a page to answer them, while no page is open.

A session a page opened new and nobody ever prompted leaves nothing behind (issue 32): when it
closes — its page's Close, the server stopping, or every page having left it for `LEFT_FOR`
seconds (a reload comes back well within that) — what opening it wrote is removed: the
session's files where its store can delete them (the native agent writes one at once) and
avatar's record of it. Only sessions still empty by every account (their store's and avatar's
copy of the turns) go, and no agent is started to delete anything (Gemini CLI's own
context-only chat file, which no listing shows, stays in its store).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from avatar.core.errors import AvatarError
from avatar.core.tasks import BackgroundTasks

if TYPE_CHECKING:
    from avatar.server.live import Event, LiveSession

#: The client name the web server holds the sessions it opened with.
HOLDER = "web"
#: Seconds a new, never prompted session the page opened stays live once no page shows it.
LEFT_FOR = 5.0
#: Seconds the stopping server waits at most for what its closed sessions still remove.
SETTLE_WITHIN = 10.0


def unprompted(history: list[Event]) -> list[tuple[str, str]]:
    """The sessions (provider, id) opened new in a live session's `history` that no turn
    ran on (a provider switch opens another)."""
    fresh: list[tuple[str, str]] = []
    current: tuple[str, str] | None = None
    for event in history:
        kind = event.get("type")
        if kind == "session":
            current = (str(event.get("provider")), str(event.get("session_id")))
            if event.get("how") == "new" and current not in fresh:
                fresh.append(current)
        elif kind == "turn_started" and current in fresh:
            fresh.remove(current)
    return fresh


def _discard(live: LiveSession) -> None:
    """Remove what opening the unprompted sessions of the closed `live` wrote."""
    catalog = live.engine.library.catalog
    for provider, session_id in unprompted(live.history):
        with contextlib.suppress(AvatarError):
            if catalog.copy(provider, session_id).messages:
                continue  # (avatar carried turns in it after all)
        info = None
        with contextlib.suppress(AvatarError):
            info = live.engine.library.find(session_id, provider)
        if info is not None and info.messages:
            continue
        try:
            if info is not None:
                with contextlib.suppress(AvatarError):
                    catalog.delete(info)  # (a store that cannot delete: its record only)
            catalog.records().forget(provider, session_id)
        except OSError:  # a full or read-only disk: it stays, as any session would
            continue


class Holder:
    """The sessions the page opened, held (see the module docstring)."""

    def __init__(self) -> None:
        self._tasks = BackgroundTasks()
        self._timers: set[asyncio.TimerHandle] = set()

    def hold(self, live: LiveSession, events: AsyncIterator[Event]) -> None:
        """Read `HOLDER`'s subscription `events` to `live` while it lives; when `live` has
        closed, remove what its unprompted sessions left."""

        async def drain() -> None:
            async for _ in events:
                pass
            if live.closed and live.opener == HOLDER:
                _discard(live)

        self._tasks(drain())

    def left(self, live: LiveSession) -> None:
        """A page stopped showing `live`: close it in `LEFT_FOR` seconds if by then it is a
        session the page opened new that nobody prompted and nobody shows."""
        if live.opener != HOLDER or live.closed:
            return

        def check() -> None:
            self._timers.discard(timer)
            if _abandoned(live):
                self._tasks(live.close())  # (its drain removes what it left)

        timer = asyncio.get_running_loop().call_later(LEFT_FOR, check)
        self._timers.add(timer)

    async def settle(self) -> None:
        """The server stops (the hub has closed every session): wait, a while at most, for
        what the closed sessions still have to remove; pending checks are moot."""
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._tasks.wait(), SETTLE_WITHIN)


def _abandoned(live: LiveSession) -> bool:
    return (
        not live.closed
        and not live.busy
        and set(live.clients) <= {HOLDER}
        and bool(unprompted(live.history))
        and not any(e.get("type") == "turn_started" for e in live.history)
    )


#: The web server's holder (one per process, as the server is).
HELD = Holder()
