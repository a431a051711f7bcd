"""The engine server's Unix socket (docs/design.md §11): one per user, serving the hub.

The socket is created 0600 in a 0700 directory of the user's (`avatar.server.protocol`), and
every connection's peer is checked (SO_PEERCRED): another user's is refused, even where the
file modes would let it through (root, a loosened directory), and so is a process inside
avatar's walls (`avatar.policy.confined`), whatever it can see of the socket: the server runs
outside the walls. A lock file held for the server's life makes it one per user. Nothing
listens on TCP.

What a `run` request runs is the CLI's business: the CLI hands its runner in (`Server.runner`),
the server knows nothing of commands.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import stat
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from avatar.core.errors import AvatarError
from avatar.policy.confined import confined_more
from avatar.policy.kernel.guard import guard
from avatar.server.attaching import attach
from avatar.server.hosted import host
from avatar.server.hub import Hub
from avatar.server.peer import Peer, peer_creds, peer_pidfd, read_frame
from avatar.server.protocol import ProtocolError, decode, socket_path
from avatar.server.shared import error_line

#: What a client inside avatar's walls is told (`avatar.policy.confined`).
WALLED = "the server serves no process inside avatar's walls"


class AlreadyRunning(AvatarError):
    """Another server of this user's runs."""


#: What runs a `run` request: the request and the peer; streams its output to the peer and
#: sends the `exit` frame (or `fallback`).
Runner = Callable[[Hub, dict[str, Any], Peer], Awaitable[None]]


class UnsafeDirectory(AvatarError):
    """The socket's directory is another user's, or open to others."""


def private_dir(path: Path) -> Path:
    """`path`, made 0700 if it does not exist; UnsafeDirectory when it is not the user's own
    or others can enter it (someone else could listen in its place)."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise UnsafeDirectory(f"{path} is not a directory of this user's")
    if info.st_mode & 0o077:
        raise UnsafeDirectory(f"{path} is open to other users (mode {info.st_mode & 0o777:o})")
    return path


class Server:
    """The user's server: the hub, on the socket; `serve()` runs it until stopped."""

    def __init__(
        self,
        hub: Hub,
        *,
        runner: Runner | None = None,
        idle_exit: float | None = None,
        path: Path | None = None,
    ) -> None:
        self.hub = hub
        self.runner = runner
        self.idle_exit = idle_exit
        self.path = path or Path(socket_path())
        self._stop = asyncio.Event()
        self._connections = 0
        self._idle_since = time.monotonic()
        self._lock_fd: int | None = None

    def claim(self) -> None:
        """Become the user's one server: the lock, the directory, a stale socket removed.
        AlreadyRunning when another server holds the lock."""
        private_dir(self.path.parent)
        fd = os.open(self.path.parent / "server.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid = (self.path.parent / "server.pid").read_text().strip() or "?"
            raise AlreadyRunning(f"a server runs already (pid {pid}, {self.path})") from None
        self._lock_fd = fd
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # (a server that was killed left it)
        (self.path.parent / "server.pid").write_text(f"{os.getpid()}\n")

    async def serve(self, ready: Callable[[], None] | None = None) -> None:
        """Listen until `stop()`, a `stop` request, SIGTERM/SIGINT/SIGHUP or `idle_exit`
        seconds without a client or a running turn; then close every live session (their
        agents stop) and remove the socket."""
        if self._lock_fd is None:
            self.claim()
        old = os.umask(0o177)  # the socket is born 0600: no moment when others could connect
        try:
            server = await asyncio.start_unix_server(self._accept, path=str(self.path))
        finally:
            os.umask(old)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self._stop.set)
        watcher = asyncio.ensure_future(self._watch_idle())
        try:
            if ready is not None:
                ready()
            await self._stop.wait()
        finally:
            watcher.cancel()
            server.close()
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            await self.hub.close()
            # (what its agents left in their groups, and the guard itself: ended before the
            # lock `serve --stop` waits on is released, not after this process exits)
            guard().close()
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                loop.remove_signal_handler(sig)
            self.release()

    def release(self) -> None:
        """Give up being the user's server (its pid file, then the lock `serve --stop`
        waits on); done by `serve()` as it ends, and safe to call again."""
        with contextlib.suppress(FileNotFoundError):
            (self.path.parent / "server.pid").unlink()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def stop(self) -> None:
        """End the server (as `avatar serve --stop` does)."""
        self._stop.set()

    @property
    def idle(self) -> bool:
        """No client connected, no web page watching and no live session busy."""
        if self._connections or self.hub.watching:
            return False
        return not any(s.busy for s in self.hub.sessions())

    async def _watch_idle(self) -> None:
        if self.idle_exit is None:
            return
        while True:
            await asyncio.sleep(min(1.0, self.idle_exit / 4))
            if not self.idle:
                self._idle_since = time.monotonic()
            elif time.monotonic() - self._idle_since >= self.idle_exit:
                self._stop.set()
                return

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        peer = Peer(reader, writer)
        peer.pid, uid = peer_creds(sock) if sock is not None else (0, -1)
        if uid != os.getuid():
            peer.send({"error": "this server is another user's", "exit": 2})
            await self._close(writer)
            return
        if self._walled(sock, peer.pid):
            await self._refuse(peer)
            return
        self._connections += 1
        try:
            first = await read_frame(reader)
            if first:
                await self._handle(decode(first), peer)
        except ProtocolError as e:
            peer.send({"error": str(e), "exit": 2})
        except ConnectionError:
            pass
        except Exception as e:  # a bug: said to the client in one line, and the server goes on
            if os.environ.get("AVATAR_DEBUG"):
                raise
            peer.send({"error": f"internal error in the server: {error_line(e)}", "exit": 1})
        finally:
            self._connections -= 1
            self._idle_since = time.monotonic()
            await self._close(writer)

    @staticmethod
    def _walled(sock: Any, pid: int) -> bool:
        """Does the peer run inside avatar's walls (or any confinement this server lacks)?
        The server runs outside them: it works for no such process, whatever it can see."""
        pidfd = peer_pidfd(sock) if sock is not None else None
        try:
            return confined_more(pid, pidfd)
        finally:
            if pidfd is not None:
                os.close(pidfd)

    async def _refuse(self, peer: Peer) -> None:
        """One line for a walled peer; a command it asked for runs in its own process (within
        its walls), as if no server ran."""
        with contextlib.suppress(ConnectionError, ValueError, TimeoutError):
            first = await asyncio.wait_for(read_frame(peer.reader), 10)
            if first and decode(first).get("op") == "run":
                peer.send({"fallback": True, "notice": WALLED})
            else:
                peer.send({"error": WALLED, "exit": 2})
        await self._close(peer.writer)

    async def _close(self, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()

    async def _handle(self, frame: dict[str, Any], peer: Peer) -> None:
        op = frame.get("op")
        if op == "ps":
            peer.send({"live": [info.to_dict() for info in self.hub.live()]})
        elif op == "stop":
            peer.send({"ok": os.getpid()})
            self._stop.set()
        elif op == "run" and self.runner is not None:
            await self.runner(self.hub, frame, peer)
        elif op == "attach":
            await attach(self.hub, frame, peer)
        elif op == "host":
            await host(self.hub, frame, peer)
        else:
            peer.send({"error": f"unknown request {op!r}", "exit": 2})
