"""One client connection of the server, as its handlers see it: frames out, frames in; and who
is at the other end of a Unix socket (`peer_creds`), which the server asks of its clients and a
REPL of the server."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import AsyncIterator
from typing import Any

from avatar.server.protocol import decode, encode


class Peer:
    """One client connection, as the server's handlers see it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.gone = False
        self.pid = 0  #: the client's process id (SO_PEERCRED)

    def send(self, frame: dict[str, Any]) -> None:
        """Send one frame (dropped once the client has gone)."""
        if self.gone or self.writer.is_closing():
            self.gone = True
            return
        self.writer.write(encode(frame))

    async def frames(self) -> AsyncIterator[dict[str, Any]]:
        """The frames the client sends, until it closes its end."""
        while True:
            line = await self.reader.readline()
            if not line:
                self.gone = True
                return
            try:
                yield decode(line)
            except ValueError:
                self.send({"error": "not a JSON object", "exit": 2})


def peer_creds(sock: socket.socket) -> tuple[int, int]:
    """The pid and uid of the process at the other end of a Unix socket."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _ = struct.unpack("3i", creds)
    return int(pid), int(uid)


#: SO_PEERPIDFD (Linux 6.5; `socket` names it from Python 3.13 on).
_SO_PEERPIDFD = getattr(socket, "SO_PEERPIDFD", 77)


def peer_pidfd(sock: socket.socket) -> int | None:
    """A pidfd of the process that connected (the caller closes it), where the kernel gives
    one: it stays that process's even after its pid is reused. None on older kernels."""
    try:
        return int(sock.getsockopt(socket.SOL_SOCKET, _SO_PEERPIDFD))
    except OSError:
        return None
