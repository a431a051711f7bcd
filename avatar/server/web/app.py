"""The web server's routes (Starlette), behind the token gate (`auth`): no CORS middleware,
so no `Access-Control-*` header is ever sent and another site's script cannot read a page;
every answer forbids framing (`headers`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from avatar.library.export.html import style
from avatar.server.web import library_pages, live_api, live_pages
from avatar.server.web.auth import TokenGate
from avatar.server.web.context import Web
from avatar.server.web.headers import Guarded

if TYPE_CHECKING:
    from starlette.requests import Request

    from avatar.server.hub import Hub
    from avatar.server.web.auth import ASGIApp, Receive, Scope, Send

STATIC = Path(__file__).parent / "static"


async def _home(request: Request) -> Response:
    return RedirectResponse("/library", status_code=303)


async def _export_css(request: Request) -> Response:
    return Response(style(), media_type="text/css", headers={"cache-control": "no-cache"})


class InUse:
    """While a request of the page runs, the server is in use (`serve --idle-exit`): a page
    whose session takes long to open, and a page with its event stream open, keep it."""

    def __init__(self, app: ASGIApp, hub: Hub) -> None:
        self.app, self.hub = app, hub

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # (a lifespan would be in use for the server's life)
            await self.app(scope, receive, send)
            return
        with self.hub.watched():
            await self.app(scope, receive, send)


def make_app(hub: Hub, token: str, project: Path, hosts: set[str]) -> ASGIApp:
    """The whole web server as an ASGI app: `hub`'s sessions, the library of `project` first,
    answering only to `hosts` (its `Host` header values) and requests carrying `token`."""
    routes = [
        Route("/", _home),
        Route("/library", library_pages.index),
        Route("/library/{sid}", library_pages.show),
        Route("/library/{sid}/export", library_pages.export),
        Route("/live", live_pages.index),
        Route("/live/open", live_pages.open_live, methods=["POST"]),
        Route("/chat/{handle}", live_pages.chat),
        Route("/chat/{handle}/events", live_api.events),
        Route("/chat/{handle}/prompt", live_api.prompt, methods=["POST"]),
        Route("/chat/{handle}/answer", live_api.answer, methods=["POST"]),
        Route("/chat/{handle}/switch", live_api.switch, methods=["POST"]),
        Route("/chat/{handle}/cancel", live_api.cancel, methods=["POST"]),
        Route("/chat/{handle}/close", live_api.close, methods=["POST"]),
        Route("/static/export.css", _export_css),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes)
    app.state.web = Web(hub, project)
    return Guarded(TokenGate(InUse(app, hub), token, hosts))
