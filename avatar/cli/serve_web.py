"""`avatar serve --web [--port N]` (docs/design.md §11): the server's engine as a web page too, on
127.0.0.1 only, at the URL printed on stdout (its token inside). Kept apart from the serve
command itself: the page's framework (Starlette, uvicorn) loads only with `--web`."""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from avatar.core.errors import UsageError

if TYPE_CHECKING:
    from avatar.server.hub import Hub

F = TypeVar("F", bound=Callable[..., Any])


def web_options(command: F) -> F:
    """The serve command's `--web` and `--port` options (`--port` alone is a usage error,
    said before the server starts)."""

    @functools.wraps(command)
    def checked(*args: Any, web: bool, port: int | None, **kwargs: Any) -> Any:
        if port is not None and not web:
            raise UsageError("--port is the web page's: use it with --web")
        return command(*args, web=web, port=port, **kwargs)

    wrapped = click.option(
        "--port",
        type=click.IntRange(0, 65535),
        default=None,
        help="The web page's port on 127.0.0.1 (default: a free one).",
    )(checked)
    return cast(
        "F",
        click.option(
            "--web", is_flag=True, help="Serve a web page too, on 127.0.0.1 (its URL is printed)."
        )(wrapped),
    )


@contextlib.asynccontextmanager
async def web_page(hub: Hub, web: bool, port: int | None) -> AsyncIterator[None]:
    """While it is entered, `hub` as a web page when `web` (the URL printed on stdout)."""
    if not web:
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
