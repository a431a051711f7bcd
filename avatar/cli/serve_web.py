"""`avatar serve --web [--port N]` (DESIGN §11): the server's engine as a web page too, on
127.0.0.1 only, at the URL printed on stdout (its token inside). Kept apart from the serve
command itself: the page's framework (Starlette, uvicorn) loads only with `--web`."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from avatar.core.errors import UsageError

if TYPE_CHECKING:
    from avatar.server.hub import Hub

F = TypeVar("F", bound=Callable[..., Any])


def web_options(command: F) -> F:
    """The serve command's `--web` and `--port` options."""
    command = click.option(
        "--port",
        type=click.IntRange(0, 65535),
        default=None,
        help="The web page's port on 127.0.0.1 (default: a free one).",
    )(command)
    return click.option(
        "--web", is_flag=True, help="Serve a web page too, on 127.0.0.1 (its URL is printed)."
    )(command)


@contextlib.asynccontextmanager
async def web_page(hub: Hub, web: bool, port: int | None) -> AsyncIterator[None]:
    """While it is entered, `hub` as a web page when `web` (the URL printed on stdout)."""
    if not web:
        if port is not None:
            raise UsageError("--port is the web page's: use it with --web")
        yield
        return
    from avatar.server.web.run import start

    server = await start(hub, Path.cwd(), port or 0)
    sys.stdout.write(f"web page: {server.url}\n")
    sys.stdout.flush()
    try:
        yield
    finally:
        await server.stop()
