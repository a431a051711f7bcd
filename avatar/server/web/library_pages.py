"""The session library as pages: every provider's sessions of a project (or of every
project), a search, one session shown as the HTML export shows it (rendered text, code
highlighted, tool calls with their results), and its export as a download."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, Response

from avatar.core.errors import AvatarError
from avatar.library.export.doc import prepare
from avatar.library.export.html import body, time_tag
from avatar.server.web.layout import attr, page, table
from avatar.server.web.sidebar import sidebar

if TYPE_CHECKING:
    from starlette.requests import Request

    from avatar.library.library import Library
    from avatar.library.search.hits import SearchHit
    from avatar.server.web.context import Web
    from avatar.sessions.types import SessionInfo

#: The export formats offered for download, with their media types.
FORMATS = {"md": "text/markdown", "html": "text/html", "json": "application/json"}
#: Rows of a listing or a search.
LIMIT = 200


def _web(request: Request) -> Web:
    web: Web = request.app.state.web
    return web


def _project(request: Request) -> Path:
    given = request.query_params.get("cwd", "").strip()
    return Path(given).expanduser() if given else _web(request).project


async def index(request: Request) -> Response:
    """`/library`: the sessions of a project (`cwd`, default the server's), of every project
    (`all`), or those a search (`q`) finds; `provider` keeps one provider's."""
    q = request.query_params.get("q", "").strip()
    provider = request.query_params.get("provider") or None
    every = bool(request.query_params.get("all"))
    project = _project(request)
    try:
        library = _web(request).hub.library(project)
        if q:
            hits = await run_in_threadpool(
                library.search, q, provider=provider, all_projects=every, limit=LIMIT
            )
            rows = _hits(hits)
        else:
            found = await run_in_threadpool(library.sessions, provider, any_cwd=every)
            rows = _rows(found[:LIMIT])
    except AvatarError as e:
        return _error(str(e), 400)
    providers = [s.name for s in library.catalog.registry.specs()]
    shown = _form(q, provider, every, project, providers) + rows
    side = await sidebar(_web(request), project)
    return HTMLResponse(page("Library", shown, here="/library", sidebar=side))


def _form(q: str, provider: str | None, every: bool, project: Path, providers: list[str]) -> str:
    options = '<option value="">every provider</option>' + "".join(
        f"<option{' selected' if p == provider else ''}>{escape(p)}</option>" for p in providers
    )
    return (
        '<h1>Sessions</h1><form class="search" method="get" action="/library">'
        f'<input type="search" name="q" value="{attr(q)}" placeholder="search what was said"'
        " autofocus>"
        f'<select name="provider">{options}</select>'
        f'<input type="text" name="cwd" value="{attr(project)}" title="project" class="cwd">'
        f'<label><input type="checkbox" name="all" value="1"{" checked" if every else ""}>'
        " every project</label><button>Search</button></form>"
    )


def _link(info: SessionInfo) -> str:
    return f'<a href="/library/{attr(info.id)}">{escape(info.id[:12])}</a>'


def _rows(sessions: list[SessionInfo]) -> str:
    if not sessions:
        return '<p class="empty">No sessions.</p>'
    rows = "".join(
        f'<tr class="session"><td class="provider">{escape(s.provider)}</td>'
        f'<td class="id">{_link(s)}</td>'
        f"<td>{escape(s.name or s.title or '')}</td><td class=cwd>{escape(s.cwd or '')}</td>"
        f"<td>{time_tag(s.updated or s.created)}</td><td class=n>{s.messages}</td></tr>"
        for s in sessions
    )
    return table(("provider", "id", "title", "project", "updated", "msgs"), rows)


def _marked(hit: SearchHit) -> str:
    out, at = [], 0
    for start, end in hit.spans:
        out += [escape(hit.snippet[at:start]), f"<mark>{escape(hit.snippet[start:end])}</mark>"]
        at = end
    return "".join([*out, escape(hit.snippet[at:])])


def _hits(hits: list[SearchHit]) -> str:
    if not hits:
        return '<p class="empty">Nothing found.</p>'
    rows = "".join(
        f'<tr class="hit"><td>{escape(h.session.provider)}</td><td class="id">'
        f"{_link(h.session)}</td><td>{escape(h.session.name or h.session.title or '')}"
        f'<div class="snippet">{_marked(h)}</div></td><td>{time_tag(h.session.updated)}</td></tr>'
        for h in hits
    )
    return table(("provider", "id", "where it matched", "updated"), rows)


def _error(message: str, status: int) -> HTMLResponse:
    said = f'<p class="error">{escape(message)}</p>'
    return HTMLResponse(page("Error", said), status_code=status)


async def show(request: Request) -> Response:
    """`/library/{id}`: one session as the HTML export shows it, with its export links and
    a button that opens it live."""
    ref = request.path_params["sid"]
    library = _web(request).hub.library(_web(request).project)
    try:
        info = library.find(ref)
        transcript = await run_in_threadpool(library.transcript, info)
    except AvatarError as e:
        return _error(str(e), 404)
    doc = prepare(transcript, library.catalog.registry.secrets())
    links = " ".join(
        f'<a class="export" href="/library/{attr(info.id)}/export?format={fmt}">{fmt}</a>'
        for fmt in FORMATS
    )
    resume = (
        '<form method="post" action="/live/open" class="inline">'
        f'<input type="hidden" name="resume" value="{attr(info.id)}">'
        f'<input type="hidden" name="cwd" value="{attr(info.cwd or "")}">'
        "<button>Open live</button></form>"
    )
    head = f'<h1>{escape(doc.title)}</h1><p class="actions">export: {links} {resume}</p>'
    web = _web(request)
    side = await sidebar(web, Path(info.cwd) if info.cwd else web.project, info.id)
    return HTMLResponse(page(doc.title, head + body(doc), here="/library", sidebar=side))


async def export(request: Request) -> Response:
    """`/library/{id}/export?format=md|html|json`: the export as a download (secrets
    masked, as `session export` writes it)."""
    fmt = request.query_params.get("format", "md")
    if fmt not in FORMATS:
        return _error(f"no export format '{fmt}': md, html or json", 400)
    library: Library = _web(request).hub.library(_web(request).project)
    try:
        info = library.find(request.path_params["sid"])
        text = await run_in_threadpool(library.export, info, fmt)
    except AvatarError as e:
        return _error(str(e), 404)
    name = f"{info.provider}-{info.id}.{fmt}"
    disposition = f'attachment; filename="{name}"'
    headers = {"content-disposition": disposition}
    return Response(text, media_type=f"{FORMATS[fmt]}; charset=utf-8", headers=headers)
