"""A command running inside the server for a client (`avatar.cli.served`): where its output
goes, what the client's terminal is, and the work it leaves for the server's event loop."""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from avatar.server.hub import Hub
    from avatar.server.peer import Peer


class Declined(BaseException):
    """The command needs what only the client has (its stdin): the client runs it itself,
    or, for a command that reads it whole (`whole`), sends it and the server runs the command
    again. (Not an Exception: the CLI's error contract must let it through.)"""

    def __init__(self, whole: bool = False) -> None:
        super().__init__()
        self.whole = whole


class Chunks(io.TextIOBase):
    """A client's stdout or stderr: what is written goes to it as `out`/`err` frames; it is a
    terminal when the client's stream is one."""

    def __init__(self, send: Callable[[dict[str, Any]], None], key: str, tty: bool) -> None:
        self.send, self.key, self.tty = send, key, tty
        self.written = False  #: whether anything was sent yet

    def write(self, text: str) -> int:
        """Send `text` to the client."""
        if text:
            self.written = True
            self.send({self.key: text})
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
    client's is. Reading it declines the command (the client runs it itself), unless the
    client sent it (`data`, when the command read it whole: then it reads that)."""

    def __init__(self, tty: bool, data: bytes | None = None) -> None:
        self.tty = tty
        self.data = data

    def isatty(self) -> bool:
        """Whether the client's stdin is a terminal."""
        return self.tty

    def read(self, size: int | None = -1) -> str:
        """What the client sent; else declines (a whole read asks the client for it)."""
        return self.take(size).decode("utf-8", "surrogateescape")

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        """Declines: the input is the client's."""
        raise Declined

    def take(self, size: int | None) -> bytes:
        """All of the input the client sent (once); declines when it sent none."""
        if self.data is None or (size is not None and size >= 0):
            raise Declined(whole=size is None or size < 0)
        data, self.data = self.data, b""
        return data

    @property
    def buffer(self) -> _Bytes:
        """The same input as bytes."""
        return _Bytes(self)


class _Bytes:
    """`NoStdin.buffer`: its input as bytes."""

    def __init__(self, stdin: NoStdin) -> None:
        self.stdin = stdin

    def read(self, size: int | None = -1) -> bytes:
        """What the client sent; else declines (see `NoStdin.read`)."""
        return self.stdin.take(size)

    def readline(self, size: int | None = -1) -> bytes:
        """Declines: the input is the client's."""
        raise Declined


class Served:
    """One command run for a client: the hub, its output streams, and (set by a command
    whose work is a session's, as `chat`) what the server runs after it parsed."""

    def __init__(self, hub: Hub, peer: Peer, out: Chunks, err: Chunks) -> None:
        self.hub, self.peer, self.out, self.err = hub, peer, out, err
        self.later: Callable[[], Awaitable[int]] | None = None


#: The command running in the server for a client (None: a command run in its own process).
SERVING: ContextVar[Served | None] = ContextVar("avatar_serving", default=None)
