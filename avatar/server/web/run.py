"""Running the web server beside the socket server (`avatar serve --web`): uvicorn in the
server's own event loop, on a socket bound to 127.0.0.1 only, the token made here."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.core.errors import UsageError

if TYPE_CHECKING:
    import uvicorn

    from avatar.server.hub import Hub

#: The only address the web server listens on.
HOST = "127.0.0.1"


@dataclass
class WebServer:
    """A running web server: `url` (with the token) is what to open."""

    url: str
    port: int
    _server: uvicorn.Server
    _task: asyncio.Task[None]

    async def stop(self) -> None:
        """Stop serving (open event streams are cut), once the sessions the hub closed have
        had what they leave removed (`holder`)."""
        from avatar.server.web.holder import HELD

        await HELD.settle()
        self._server.should_exit = True
        self._server.force_exit = True
        await self._task


def _quiet_class() -> type[uvicorn.Server]:
    import uvicorn

    class Quiet(uvicorn.Server):
        """uvicorn's server without its signal handlers: the process's own (`avatar serve`)
        decide when it stops."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return Quiet


def _bind(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it: a page's small writes go at once, not after the 40 ms
    # of Nagle's algorithm waiting on a delayed ACK.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((HOST, port))
    except OSError as e:
        sock.close()
        raise UsageError(f"cannot listen on {HOST}:{port}: {e.strerror}") from None
    sock.listen(64)
    sock.setblocking(False)
    return sock


async def start(hub: Hub, project: Path, port: int = 0) -> WebServer:
    """Serve `hub` as a web page on 127.0.0.1:`port` (0: a free port), the library of
    `project` first; returns once it listens."""
    import uvicorn

    from avatar.server.web.app import make_app
    from avatar.server.web.auth import new_token

    sock = _bind(port)
    port = sock.getsockname()[1]
    token = new_token()
    hosts = {f"{HOST}:{port}", f"localhost:{port}"}
    config = uvicorn.Config(
        make_app(hub, token, project, hosts),
        log_level="warning",
        lifespan="off",
        access_log=False,
        timeout_graceful_shutdown=1,
    )
    server = _quiet_class()(config)
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task  # it failed: say why
        await asyncio.sleep(0.01)
    return WebServer(f"http://{HOST}:{port}/?token={token}", port, server, task)
