"""The session sidebar every page has: the library's sessions of the page's project (every
provider's), newest first, the one the page shows marked; each opens where it is (its chat
page when it is live on this server, else its library page). A button above them opens a new
chat in that project."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool

from avatar.core.errors import AvatarError
from avatar.core.times import ago
from avatar.server.web.layout import attr

if TYPE_CHECKING:
    from avatar.server.web.context import Web
    from avatar.sessions.types import SessionInfo

#: Sessions the sidebar lists (the library page lists the rest).
LIMIT = 40


def _label(s: SessionInfo) -> str:
    said = " ".join((s.name or s.title or "").split())
    return said or ("new chat" if not s.messages else "untitled")


def _href(web: Web, s: SessionInfo) -> str:
    try:
        live = web.hub.get(s.id)
    except AvatarError:
        live = None
    if live is not None:
        return f"/chat/{quote(web.handles.name(live), safe='')}"
    return f"/library/{quote(s.id, safe='')}"


def _item(web: Web, s: SessionInfo, current: str | None) -> str:
    here = ' class="current" aria-current="page"' if s.id == current else ""
    facts = f"{s.provider} · {ago(s.updated or s.created)}"
    return (
        f'<li{here}><a href="{attr(_href(web, s))}"><span class="t">{escape(_label(s))}</span>'
        f"<small>{escape(facts)}</small></a></li>"
    )


async def sidebar(web: Web, project: Path, current: str | None = None) -> str:
    """The sidebar of a page about `project`, session `current` marked (the chat page's own
    session first, as a new chat, when the library does not list it yet)."""
    try:
        library = web.hub.library(project)
        found = await run_in_threadpool(library.sessions)
    except AvatarError:
        found = []
    items = [_item(web, s, current) for s in found[:LIMIT]]
    if current and not any(s.id == current for s in found[:LIMIT]):
        items.insert(
            0,
            '<li class="current" aria-current="page"><span><span class="t">this chat'
            "</span><small>new</small></span></li>",
        )
    more = (
        f'<p class="more"><a href="/library?cwd={attr(quote(str(project)))}">all sessions</a></p>'
    )
    new = (
        '<form method="post" action="/live/open" class="new">'
        f'<input type="hidden" name="cwd" value="{attr(project)}"><button>New chat</button></form>'
    )
    listed = f"<ul>{''.join(items)}</ul>" if items else '<p class="empty">No sessions yet.</p>'
    title = f'<h2 title="{attr(project)}">{escape(project.name or str(project))}</h2>'
    return f"{title}{new}{listed}{more}"
