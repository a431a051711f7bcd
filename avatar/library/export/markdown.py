"""An answer's markdown as HTML, drawn as the terminal draws it (`avatar.cli.output.markdown`):
headings, lists with their numbers as written, tables, quotes, rules, emphasis, inline code,
code blocks highlighted (`highlight`). The HTML export shows answers with it, and the web page
each block of an answer as it streams (`avatar.server.web.stream`).

What a model writes is text, never markup. markdown-it-py (a CommonMark parser, the one rich
uses) runs with raw HTML off, so `<script>` or `<img onerror=…>` in an answer is shown as the
characters it is, and its renderer escapes every text and attribute. A link is its text and
its address, as the terminal draws it: only the address is clickable, so the text cannot hide
where it goes; addresses pass
markdown-it's `validateLink` (no `javascript:`, `vbscript:`, `file:`), and open in a new tab
without a referrer. An image is its description and address, never an `<img>`: nothing a
model names is fetched (an image's address could carry what the model read). A table sits in
a box of its own that scrolls sideways, so a wide one never widens the page. Table
alignment is a class, not a `style` attribute (the web page's CSP allows no inline style).

markdown-it-py loads on the first call (~50 ms), never at start-up.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from html import escape
from typing import TYPE_CHECKING, Any

from avatar.library.export.highlight import highlight

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.renderer import RendererHTML
    from markdown_it.token import Token

    from avatar.core.markdown_blocks import Block

#: The attributes of every link a model wrote.
LINK = 'rel="noopener noreferrer nofollow" target="_blank"'
#: Addresses longer than this are shown cut (the link keeps the whole).
SHOWN_URL = 80


def _shown(url: str) -> str:
    return url if len(url) <= SHOWN_URL else url[: SHOWN_URL - 1] + "…"


def _address(url: str) -> str:
    return f'<a href="{escape(url, quote=True)}" {LINK}>{escape(_shown(url))}</a>'


def code_html(code: str, lang: str) -> str:
    """A code block, highlighted for `lang` (escaped as it is for none or an unknown one)."""
    return f'<pre class="hl"><code>{highlight(code.rstrip(chr(10)), lang)}</code></pre>'


def _fence(code: str, lang: str, attrs: str) -> str:
    return code_html(code, lang)


def _link_open(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: Any, env: Any
) -> str:
    token = tokens[idx]
    href = str(token.attrGet("href") or "")
    if token.markup == "autolink":  # `<https://…>`: its text is its address
        env.setdefault("links", []).append(None)
        return f'<a href="{escape(href, quote=True)}" {LINK}>'
    env.setdefault("links", []).append(href)
    return '<span class="link">'


def _link_close(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: Any, env: Any
) -> str:
    href = env["links"].pop() if env.get("links") else None
    if href is None:
        return "</a>"
    return f'</span> <span class="href">({_address(href)})</span>' if href else "</span>"


def _image(self: RendererHTML, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env)
    src = str(token.attrGet("src") or "")
    shown = f' <span class="href">({_address(src)})</span>' if src.startswith("http") else ""
    return f'<span class="image">🖼 {escape(alt or "image")}</span>{shown}'


def _cell(self: RendererHTML, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    style = str(token.attrGet("style") or "")
    if style.startswith("text-align:"):
        token.attrs.pop("style")
        token.attrSet("class", "align-" + style.partition(":")[2])
    return self.renderToken(tokens, idx, options, env)


def _table_open(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: Any, env: Any
) -> str:
    return '<div class="table"><table>\n'


def _table_close(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: Any, env: Any
) -> str:
    return "</table></div>\n"


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt(
        "commonmark", {"html": False, "linkify": False, "typographer": False, "highlight": _fence}
    )
    md.enable(["table", "strikethrough"])
    for name, rule in (
        ("link_open", _link_open),
        ("link_close", _link_close),
        ("image", _image),
        ("th_open", _cell),
        ("td_open", _cell),
        ("table_open", _table_open),
        ("table_close", _table_close),
    ):
        md.add_render_rule(name, rule)
    return md


def markdown_html(text: str) -> str:
    """`text`, markdown, as HTML (see the module docstring): what a model wrote, escaped."""
    return str(_parser().render(text, {}))


def block_html(block: Block) -> str:
    """One complete block of a streamed answer (`avatar.core.markdown_blocks`) as HTML."""
    if block.kind == "code":
        return code_html(block.text, block.lang) + "\n"
    return markdown_html(block.text)
