"""The live sessions as pages: the list (`avatar ps` as a table, and a form that opens a new
one), opening one, and the chat page of one (its script, `static/chat.js`, streams it)."""

from __future__ import annotations

import json
import time
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

from starlette.responses import HTMLResponse, RedirectResponse, Response

from avatar.core.errors import AvatarError
from avatar.library.export.doc import prepare
from avatar.library.export.html import body
from avatar.server.hub import OpenOptions
from avatar.server.web.earlier import before_live
from avatar.server.web.holder import HELD, HOLDER
from avatar.server.web.layout import attr, page, table
from avatar.server.web.sidebar import sidebar

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from starlette.requests import Request

    from avatar.server.hub import Event, LiveInfo, LiveSession
    from avatar.server.web.context import Web

STATES = {"idle": "idle", "turn": "in a turn", "permission": "waiting on a permission"}


def _web(request: Request) -> Web:
    web: Web = request.app.state.web
    return web


def _since(started: float) -> str:
    seconds = int(time.time() - started)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02}m"


def _row(web: Web, info: LiveInfo) -> str:
    # A session the server runs opens here; one a REPL runs (its engine is the REPL's own) is
    # reached from a terminal, with `avatar attach`.
    live = web.hub.get(info.session_id) if info.session_id else None
    if live is not None:
        handle = web.handles.name(live)
        cell = f'<a href="/chat/{attr(handle)}">{escape(info.session_id[:12])}</a>'
    else:
        hint = f"a REPL's session: avatar attach {info.session_id}"
        cell = f'<span title="{attr(hint)}">{escape(info.session_id[:12])}</span> (REPL)'
    clients = ", ".join(c for c in info.clients if c != HOLDER)
    return (
        f'<tr class="live" data-state="{attr(info.state)}"><td>{escape(info.provider)}</td>'
        f'<td class="id">{cell}</td>'
        f"<td class=cwd>{escape(info.project)}</td><td>{STATES[info.state]}</td>"
        f"<td>{escape(info.model or '?')}</td><td class=n>{info.tokens or ''}</td>"
        f"<td>{_since(info.since)}</td><td>{escape(clients)}</td></tr>"
    )


async def index(request: Request) -> Response:
    """`/live`: every live session of the server (and those REPLs list with it), and a form
    that opens a new one."""
    web = _web(request)
    rows = "".join(_row(web, info) for info in web.hub.live())
    columns = ("provider", "session", "project", "state", "model", "tokens", "since", "clients")
    shown = table(columns, rows) if rows else '<p class="empty">No live session.</p>'
    providers = [s.name for s in web.hub.library(web.project).catalog.registry.specs()]
    options = "".join(f"<option>{escape(p)}</option>" for p in providers)
    form = (
        '<h2>New chat</h2><form method="post" action="/live/open" class="open">'
        f'<select name="provider"><option value="">default provider</option>{options}</select>'
        f'<input type="text" name="cwd" value="{attr(web.project)}" title="project" class="cwd">'
        "<button>Open</button></form>"
    )
    side = await sidebar(web, web.project)
    shown = f"<h1>Live sessions</h1>{shown}{form}"
    return HTMLResponse(page("Live sessions", shown, here="/live", sidebar=side))


async def open_live(request: Request) -> Response:
    """`POST /live/open` (a form: `provider`, `cwd`, `resume`): a live session, new or the
    one `resume` names (live already, or reopened); then its chat page."""
    web = _web(request)
    # A plain form posts urlencoded fields: read here, without a multipart parser.
    form = dict(parse_qsl((await request.body()).decode("utf-8", "replace")))
    cwd = Path(str(form.get("cwd") or web.project)).expanduser()
    resume = str(form.get("resume") or "") or None
    options = OpenOptions(cwd=cwd, provider=str(form.get("provider") or "") or None)
    held: list[AsyncIterator[Event]] = []  # (the holder subscribes before the session opens)
    try:
        live = await web.hub.open(
            options, client=HOLDER, resume=resume, replay=False, answers=True, on_events=held.append
        )
    except AvatarError as e:
        said = f'<p class="error">{escape(str(e))}</p><p><a href="/live">back</a></p>'
        return HTMLResponse(page("Error", said), status_code=400)
    for events in held:
        HELD.hold(live, events)
    return RedirectResponse(f"/chat/{web.handles.name(live)}", status_code=303)


def _earlier(live: LiveSession) -> str:
    """The session's conversation before it went live (`before_live`), as the HTML export
    shows it; its events since come on the event stream."""
    transcript = before_live(live)
    if transcript is None:
        return ""
    html = body(prepare(transcript, live.engine.registry.secrets()))
    return (
        f'<details class="earlier" open><summary>Earlier in this session</summary>{html}</details>'
    )


async def chat(request: Request) -> Response:
    """`/chat/{handle}`: the chat page of a live session."""
    web = _web(request)
    handle = request.path_params["handle"]
    live = web.handles.get(web.hub, handle)
    if live is None:
        said = (
            f'<p class="error">no live session {escape(handle)}</p>'
            '<p><a href="/live">live sessions</a> · <a href="/library">library</a></p>'
        )
        return HTMLResponse(page("Not live", said), status_code=404)
    info = live.info()
    providers = [s.name for s in live.engine.registry.specs()]
    options = "".join(
        f"<option{' selected' if p == info.provider else ''}>{escape(p)}</option>"
        for p in providers
    )
    config = json.dumps({"handle": handle}).replace("<", "\\u003c")
    shown = (
        '<header class="chat-head">'
        f'<h1>Chat <span id="provider">{escape(info.provider)}</span> '
        f'<span id="session" class="id">{escape(info.session_id)}</span></h1>'
        f'<p class="bar"><span id="state">{STATES[info.state]}</span>'
        f'<label>provider <select id="switch">{options}</select></label>'
        '<button id="cancel" type="button">Stop</button>'
        '<button id="close" type="button">Close session</button>'
        '<button id="notify" type="button" hidden>Notify me</button></p></header>'
        f"{_earlier(live)}"
        '<div id="log" aria-live="polite"></div>'
        '<div class="composer"><div id="asks"></div><div id="attached"></div>'
        '<form id="prompt"><textarea name="text" rows="2" placeholder="Ask…" title="Enter sends,'
        ' Shift-Enter starts a new line; paste or drop an image to attach it"></textarea>'
        '<label class="attach" title="attach an image">+ image<input type="file" name="image"'
        ' accept="image/png,image/jpeg,image/gif,image/webp" multiple></label>'
        '<button class="send">Send</button></form></div>'
        f'<script type="application/json" id="config">{config}</script>'
    )
    side = await sidebar(web, live.engine.cwd, info.session_id)
    return HTMLResponse(page("Chat", shown, scripts=("chat.js",), here="/live", sidebar=side))
