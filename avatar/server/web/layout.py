"""The frame every page shares: head, navigation, the stylesheets (the page's own and the
HTML export's, whose markup a session shows), the escaping of an attribute, and the
tables the lists are."""

from __future__ import annotations

from html import escape

NAV = (("/library", "Library"), ("/live", "Live sessions"))


def page(title: str, body: str, *, scripts: tuple[str, ...] = (), here: str = "") -> str:
    """A whole page: `body` under the navigation; `scripts` are files of `static/`."""
    nav = "".join(
        f'<a href="{href}"{" class=here" if href == here else ""}>{name}</a>' for href, name in NAV
    )
    tags = "".join(f'<script src="/static/{name}" defer></script>' for name in scripts)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)} · avatar</title>"
        '<link rel="stylesheet" href="/static/export.css">'
        '<link rel="stylesheet" href="/static/web.css">'
        f"{tags}</head>\n"
        f'<body><nav><span class="brand">avatar</span>{nav}</nav>\n<main>{body}</main>'
        "</body></html>\n"
    )


def attr(value: object) -> str:
    """`value` escaped for an HTML attribute in double quotes."""
    return escape(str(value), quote=True)


def table(columns: tuple[str, ...], rows: str) -> str:
    """A table of sessions: `columns` over the rows (`<tr>` elements, made by the caller)."""
    head = "".join(f"<th>{name}</th>" for name in columns)
    return f'<table class="sessions"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
