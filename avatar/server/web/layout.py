"""The frame every page shares: head, navigation, the session sidebar beside the page's own
content, the stylesheets (the page's own and the HTML export's, whose markup a session shows),
the escaping of an attribute, and the tables the lists are.

The sidebar (`avatar.server.web.sidebar`) is a column on a wide screen; on a narrow one it
folds away behind the navigation's "Sessions" button (a checkbox and CSS, no script)."""

from __future__ import annotations

from html import escape

NAV = (("/library", "Library"), ("/live", "Live sessions"))


def page(
    title: str,
    body: str,
    *,
    scripts: tuple[str, ...] = (),
    here: str = "",
    sidebar: str = "",
) -> str:
    """A whole page: `body` under the navigation, `sidebar` beside it; `scripts` are files
    of `static/`."""
    nav = "".join(
        f'<a href="{href}"{" class=here" if href == here else ""}>{name}</a>' for href, name in NAV
    )
    tags = "".join(f'<script src="/static/{name}" defer></script>' for name in scripts)
    toggle = (
        '<label for="sessions-open" class="sessions-open" role="button">Sessions</label>'
        if sidebar
        else ""
    )
    aside = f'<aside class="sidebar" aria-label="Sessions">{sidebar}</aside>' if sidebar else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)} · avatar</title>"
        '<link rel="icon" href="data:,">'  # (no request for a favicon the server has not)
        '<link rel="stylesheet" href="/static/export.css">'
        '<link rel="stylesheet" href="/static/web.css">'
        f"{tags}</head>\n"
        '<body><input type="checkbox" id="sessions-open" class="toggle">'
        f'<nav><span class="brand">avatar</span>{nav}{toggle}</nav>\n'
        f'<div class="shell{" with-sidebar" if sidebar else ""}">{aside}<main>{body}</main></div>'
        "</body></html>\n"
    )


def attr(value: object) -> str:
    """`value` escaped for an HTML attribute in double quotes."""
    return escape(str(value), quote=True)


def table(columns: tuple[str, ...], rows: str) -> str:
    """A table of sessions: `columns` over the rows (`<tr>` elements, made by the caller)."""
    head = "".join(f"<th>{name}</th>" for name in columns)
    return f'<table class="sessions"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
