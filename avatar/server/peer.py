"""One client connection of the server, as its handlers see it: frames out, frames in; and who
is at the other end of a Unix socket (`peer_creds`), which the server asks of its clients and a
REPL of the server."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import AsyncIterator
from typing import Any

from avatar.server.protocol import ProtocolError, decode, encode


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    """The next frame's line from `reader`, however long (b"" at the end): a stream's
    `readline()` stops at its buffer's limit (64 KiB) and raises; this reads past it, piece by
    piece, so that the buffer's flow control still holds while a large frame comes."""
    pieces: list[bytes] = []
    while True:
        try:
            pieces.append(await reader.readuntil(b"\n"))
        except asyncio.IncompleteReadError as e:  # the end, maybe after a last piece
            pieces.append(e.partial)
        except asyncio.LimitOverrunError as e:
            pieces.append(await reader.readexactly(e.consumed))
            continue
        return b"".join(pieces)


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
        """The frames the client sends, until it closes its end (one it sends that is not a
        frame is answered with an error saying why, and skipped)."""
        while True:
            frame = await self.next_frame()
            if frame is None:
                return
            if frame:
                yield frame

    async def next_frame(self) -> dict[str, Any] | None:
        """The next frame the client sends; None when it has closed its end, `{}` (and an
        error sent to it) when what it sent is not a frame."""
        line = await read_frame(self.reader)
        if not line:
            self.gone = True
            return None
        try:
            return decode(line)
        except ProtocolError as e:
            self.send({"error": str(e), "exit": 2})
            return {}


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
