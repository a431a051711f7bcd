"""The HTML export: one self-contained page (inline CSS, no script, nothing fetched), readable
offline. Answers are markdown rendered as the terminal draws them (`markdown`: tables, lists,
headings, code highlighted; what the model wrote escaped); the user's words are kept as
written, their fenced code highlighted (`highlight`, pygments); each tool call is a `<details>`
holding its arguments and the result that answered it."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING

from avatar.library.export.doc import LABELS, call_args, facts
from avatar.library.export.highlight import css, highlight
from avatar.library.export.markdown import markdown_html

if TYPE_CHECKING:
    from avatar.library.export.doc import ExportCall, ExportDoc, ExportMessage

# ```lang … ``` blocks, as models write them.
_FENCE = re.compile(r"^(`{3,})[ \t]*([\w+#.-]*)[^\n]*\n(.*?)^\1[ \t]*$", re.M | re.S)
_CODE = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"\*\*([^*\n]+)\*\*")
#: How much of a tool call's arguments its collapsed line shows.
PREVIEW_CHARS = 80

CSS = """
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;
color:#1f2328;background:#fff}
h1{font-size:1.4rem;margin-bottom:.3rem}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem;color:#57606a;
font-size:.85rem}
dl.facts dt{font-weight:600}dl.facts dd{margin:0;font-family:ui-monospace,monospace}
.msg{border:1px solid #d0d7de;border-radius:6px;margin:1rem 0;padding:.5rem .9rem}
.msg header{font-size:.8rem;color:#57606a;display:flex;gap:.6rem}
.msg header .n{font-weight:700;color:#1f2328}
.user{background:#f6f8fa}.system{background:#fff8c5}.tool{background:#fbfbfb}
.error{border-color:#cf222e}
.text{white-space:pre-wrap;overflow-wrap:anywhere}
pre{background:#f6f8fa;border:1px solid #e5e7eb;border-radius:4px;padding:.5rem;
overflow:auto;font:13px/1.4 ui-monospace,monospace;white-space:pre-wrap}
details{margin:.4rem 0}summary{cursor:pointer;font-family:ui-monospace,monospace}
.note{color:#57606a;font-size:.8rem}.args{color:#57606a}
code{font:13px ui-monospace,monospace;background:#eff1f3;border-radius:3px;padding:0 .2rem}
pre code{background:none;padding:0}
.md>:first-child{margin-top:.2rem}.md>:last-child{margin-bottom:.2rem}
.md h1,.md h2,.md h3,.md h4,.md h5,.md h6{margin:.8rem 0 .3rem;line-height:1.25}
.md h1{font-size:1.3rem}.md h2{font-size:1.15rem}.md h3{font-size:1.05rem}
.md h4,.md h5,.md h6{font-size:1rem}
.md p,.md ul,.md ol,.md blockquote,.md pre{margin:.5rem 0}.md ul,.md ol{padding-left:1.6rem}
.md blockquote{border-left:3px solid #d0d7de;color:#57606a;padding-left:.8rem;margin-left:0}
.md hr{border:0;border-top:1px solid #d0d7de}
.md .table{overflow-x:auto;max-width:100%;margin:.5rem 0}
.md table{border-collapse:collapse;font-size:.9rem}
.md th,.md td{border:1px solid #d0d7de;padding:.25rem .6rem;text-align:left;vertical-align:top}
.md th{background:#f6f8fa;font-weight:600}
.md .align-right{text-align:right}.md .align-center{text-align:center}
.md .href,.md .image{color:#57606a}.md .href{font-size:.85rem;overflow-wrap:anywhere}
"""


def _inline(text: str) -> str:
    """Escaped prose with Markdown's inline `code` and **bold** (the rest stays as written)."""
    out = escape(text)
    out = _CODE.sub(r"<code>\1</code>", out)
    return _BOLD.sub(r"<strong>\1</strong>", out)


def message_text(text: str) -> str:
    """A user's (or the system's) message: prose kept as written (inline code and bold shown),
    fenced code highlighted."""
    parts, at = [], 0
    for m in _FENCE.finditer(text):
        if m.start() > at:
            parts.append(f'<div class="text">{_inline(text[at : m.start()].strip(chr(10)))}</div>')
        code = m.group(3).rstrip("\n")
        parts.append(f'<pre class="hl"><code>{highlight(code, m.group(2).lower())}</code></pre>')
        at = m.end()
    rest = text[at:].strip("\n")
    if rest:
        parts.append(f'<div class="text">{_inline(rest)}</div>')
    return "\n".join(parts)


def time_tag(when: datetime | None) -> str:
    """A readable UTC time, the exact one in `datetime` (the web page's lists show it too)."""
    if when is None:
        return ""
    shown = when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f'<time datetime="{when.isoformat()}">{shown}</time>'


def _result(m: ExportMessage) -> str:
    body = f"<pre>{escape(m.text) or '(no output)'}</pre>"
    if m.truncated:
        body += f'<p class="note">… {m.truncated} more characters not exported</p>'
    return body


def _call(call: ExportCall) -> str:
    args = call_args(call)
    lang = "" if isinstance(call.input, str) else "json"
    preview = args if isinstance(call.input, str) else json.dumps(call.input, ensure_ascii=False)
    preview = preview if len(preview) <= PREVIEW_CHARS else preview[: PREVIEW_CHARS - 1] + "…"
    head = f'→ {escape(call.name)} <span class="args">{escape(preview)}</span>'

    body = f'<pre class="hl"><code>{highlight(args, lang)}</code></pre>'
    if call.result is not None:
        state = " (error)" if call.result.is_error else ""
        body += f'<p class="note">result (message {call.result.n}){state}:</p>'
        body += _result(call.result)
    return f'<details class="call"><summary>{head}</summary>{body}</details>'


def _message(m: ExportMessage) -> str:
    classes = f"msg {m.role}" + (" error" if m.is_error else "")
    when = time_tag(m.time)
    label = LABELS[m.role] + (" (error)" if m.is_error else "")
    head = f'<header><span class="n">{m.n}.</span><span>{label}</span>{when}</header>'
    if m.role == "tool" and m.answers is not None:  # shown in full with its call
        body = f'<p class="note">output shown with its call in <a href="#m{m.answers}">'
        body += f"message {m.answers}</a></p>"
    elif m.role == "tool":
        body = f"<details><summary>output of {escape(m.tool_call_id or 'a tool')}</summary>"
        body += _result(m) + "</details>"
    elif m.role == "assistant":
        body = f'<div class="md">{markdown_html(m.text)}</div>' + "".join(map(_call, m.calls))
    else:
        body = message_text(m.text) + "".join(map(_call, m.calls))
    return f'<section class="{classes}" id="m{m.n}">{head}{body}</section>'


def style() -> str:
    """The page's CSS, the highlighting's included."""
    return CSS + css()


def body(doc: ExportDoc) -> str:
    """What the page shows below its title: the session facts and every message (the web
    page shows a session with it)."""
    rows = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts(doc))
    skipped = (
        f'<p class="note">({doc.skipped_lines} unreadable lines skipped)</p>'
        if doc.skipped_lines
        else ""
    )
    messages = "\n".join(_message(m) for m in doc.messages)
    return f'<dl class="facts">{rows}</dl>\n{messages}\n{skipped}'


def to_html(doc: ExportDoc) -> str:
    """The whole page."""
    title = escape(doc.title)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{title}</title><style>{style()}</style></head>\n"
        f"<body><h1>{title}</h1>{body(doc)}</body></html>\n"
    )
