"""A command running inside the server for a client (`avatar.cli.served`): where its output
goes, what the client's terminal is, and the work it leaves for the server's event loop."""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from avatar.server.hub import Hub
    from avatar.server.peer import Peer


class Declined(BaseException):
    """The command needs what only the client has (its stdin): the client runs it itself.
    (Not an Exception: the CLI's error contract must let it through.)"""


class Chunks(io.TextIOBase):
    """A client's stdout or stderr: what is written goes to it as `out`/`err` frames; it is a
    terminal when the client's stream is one."""

    def __init__(self, peer: Peer, key: str, tty: bool) -> None:
        self.peer, self.key, self.tty = peer, key, tty

    def write(self, text: str) -> int:
        """Send `text` to the client."""
        if text:
            self.peer.send({self.key: text})
        return len(text)

    def isatty(self) -> bool:
        """Whether the client's stream is a terminal."""
        return self.tty

    def writable(self) -> bool:
        """Always: it is an output stream."""
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        """The client writes what it receives as UTF-8 text."""
        return "utf-8"


class NoStdin(io.TextIOBase):
    """The client's stdin, as a command in the server sees it: a terminal or not, as the
    client's is; reading it declines the command (the client runs it itself)."""

    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        """Whether the client's stdin is a terminal."""
        return self.tty

    def read(self, size: int | None = -1) -> str:
        """Declines: the input is the client's."""
        raise Declined

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        """Declines: the input is the client's."""
        raise Declined

    @property
    def buffer(self) -> NoStdin:
        """Itself: reading bytes declines too."""
        return self


class Served:
    """One command run for a client: the hub, its output streams, and (set by a command
    whose work is a session's, as `chat`) what the server runs after it parsed."""

    def __init__(self, hub: Hub, peer: Peer, out: Chunks, err: Chunks) -> None:
        self.hub, self.peer, self.out, self.err = hub, peer, out, err
        self.later: Callable[[], Awaitable[int]] | None = None


#: The command running in the server for a client (None: a command run in its own process).
SERVING: ContextVar[Served | None] = ContextVar("avatar_serving", default=None)
