"""What every page and API call of the web server shares: the hub, the project the library
shows first, and the live sessions under stable names (`Handles`)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from avatar.server.hub import Hub, LiveSession


class Handles:
    """A live session's name in the page's URLs: the id it had when the page first saw it.
    The session id changes on a provider switch; the page's address must not."""

    def __init__(self) -> None:
        self._live: dict[str, LiveSession] = {}

    def name(self, live: LiveSession) -> str:
        """The handle of `live` (given one now if it has none)."""
        for handle, known in self._live.items():
            if known is live:
                return handle
        handle = live.session_id or f"live-{len(self._live) + 1}"
        self._live[handle] = live
        return handle

    def get(self, hub: Hub, handle: str) -> LiveSession | None:
        """The live session named `handle` (a handle, or an id `hub.get` knows), if it is
        still live."""
        live = self._live.get(handle)
        if live is None or live.closed:
            self._live.pop(handle, None)
            live = hub.get(handle)
            if live is not None:
                self._live[handle] = live
        return live


@dataclass
class Web:
    """The web server's state (`request.app.state.web`)."""

    hub: Hub
    project: Path  #: the project the library shows when none is asked for
    handles: Handles = field(default_factory=Handles)
    clients: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def client(self) -> str:
        """A new client name for one page's event stream."""
        return f"web-{next(self.clients)}"
