"""Sessions kept loaded after their last client (docs/design.md §11): a `chat --resume ID` that
follows a chat joins the session where it runs, on its agent, instead of starting an agent and
loading the session again (as acpx's queue owner keeps one for 300 s).

A session whose last client left (and that has nothing queued) stays for its config's
`server.keep_sessions` seconds (300 by default; 0 closes it at once), then closes; at most
`MOST_KEPT` are kept at once (the one kept longest closes first). `avatar ps`
lists it without clients; `avatar attach` and `chat --resume` join it. It is never joined once
it may have changed elsewhere: before a client joins, its provider's files must still be there
(it may have been deleted) and avatar's copy of its turns, which every avatar process running a
turn on it appends to, as it was when it was kept (a REPL may have run turns on it since); else
it closes and the client opens the session anew. A REPL that lists the same session with the
server (it runs it in its own process) closes it too. A native session is not kept: its file is
locked while open, and another process resuming it would wait.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from avatar.core.errors import AvatarError, UsageError

if TYPE_CHECKING:
    from avatar.engine.engine import Engine
    from avatar.server.live import LiveSession

#: Sessions kept without clients at once; keeping another closes the one kept longest (a
#: session of Claude Code, on claude or claude-agent-acp, is a process of its own).
MOST_KEPT = 4

Stamp = tuple[int, int] | None  #: size and mtime of avatar's copy of the turns (None: none)


class KeptSessions:
    """The live sessions kept without clients; `close(live)` ends one."""

    def __init__(self, close: Callable[[LiveSession], None]) -> None:
        self._close = close
        self._kept: dict[LiveSession, tuple[Stamp, asyncio.TimerHandle]] = {}

    def keep(self, live: LiveSession) -> bool:
        """Keep `live`, left without clients, for its settings' `server.keep_sessions`
        seconds; False when it is not kept (then the caller closes it)."""
        seconds = live.engine.settings.server.keep_sessions
        provider = live.engine.status().provider
        if seconds <= 0 or not live.session_id or provider is None or live.closed:
            return False
        if live.engine.registry.spec(provider).transport == "native":
            return False
        self.release(live)
        timer = asyncio.get_running_loop().call_later(seconds, self._expire, live)
        self._kept[live] = (_stamp(live), timer)
        while len(self._kept) > MOST_KEPT:  # (in the order they were kept)
            oldest = next(iter(self._kept))
            self.release(oldest)
            self._close(oldest)
        return True

    def is_kept(self, live: LiveSession) -> bool:
        """Whether `live` is kept without clients now."""
        return live in self._kept

    def join(self, live: LiveSession, engine: Engine, provider: str | None = None) -> bool:
        """May a client join `live`? Always when it is not kept; a kept one only when its
        provider's files (found through `engine`'s library) are there and unchanged since it
        was kept. It is no longer kept either way (a stale one is closed).

        `provider`: the agent the client names (`-p`). A live session of another is not
        joined, as without a server it would not be resumed there: a kept one is closed (the
        session then opens as asked, or fails saying whose it is), one in use is refused."""
        runs = live.engine.status().provider
        if provider and runs and provider != runs:
            if live not in self._kept:
                sid = live.session_id
                raise UsageError(
                    f"session {sid} is live in the server on {runs}, not {provider}: join it "
                    f"with -p {runs} (or without -p), or carry it over with -p {provider} "
                    f"--from {sid}"
                )
            self.release(live)
            self._close(live)
            return False
        kept = self._kept.get(live)
        if kept is None:
            return True
        self.release(live)
        if self._unchanged(live, engine, kept[0]):
            return True
        self._close(live)
        return False

    def sweep(self, elsewhere: Iterable[str]) -> None:
        """Close the kept sessions of these ids (REPLs run them in their own processes now)."""
        ids = set(elsewhere)
        for live in [live for live in self._kept if live.session_id in ids]:
            self.release(live)
            self._close(live)

    def release(self, live: LiveSession) -> None:
        """`live` is kept no more (a client joined it, or it closes)."""
        kept = self._kept.pop(live, None)
        if kept is not None:
            kept[1].cancel()

    def _expire(self, live: LiveSession) -> None:
        self._kept.pop(live, None)
        if not live.clients and not live.busy:
            self._close(live)

    @staticmethod
    def _unchanged(live: LiveSession, engine: Engine, stamp: Stamp) -> bool:
        if _stamp(live) != stamp:  # another process ran a turn on it, or deleted it
            return False
        try:
            info = engine.library.find(live.session_id, live.engine.status().provider)
        except AvatarError:  # (deleted meanwhile)
            return False
        return not info.gone


def _stamp(live: LiveSession) -> Stamp:
    """Size and mtime of avatar's copy of `live`'s turns (None when there is none)."""
    provider = live.engine.status().provider or ""
    path = live.engine.catalog.records().turns_path(provider, live.session_id)
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns
