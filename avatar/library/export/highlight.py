"""Code highlighted as HTML with pygments (which `rich` already brings), for the HTML export
and the web page: a fenced block by its language, a file's lines by its name (a diff's), and
the CSS of the `hl` classes. Everything not highlighted is escaped. Pygments loads on the
first call, never at start-up."""

from __future__ import annotations

from functools import cache
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pygments.formatters import HtmlFormatter
    from pygments.lexer import Lexer


@cache
def _formatter() -> HtmlFormatter[str]:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(cssclass="hl", nowrap=True)


def _lexer(lang: str) -> Lexer | None:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(lang) if lang else None
    except ClassNotFound:
        return None


def _file_lexer(path: str) -> Lexer | None:
    from pygments.lexers import get_lexer_for_filename
    from pygments.util import ClassNotFound

    try:
        return get_lexer_for_filename(path, stripnl=False)
    except ClassNotFound:
        return None


def _format(code: str, lexer: Lexer | None) -> str:
    if lexer is None:
        return escape(code)
    from pygments import highlight as pyg

    return str(pyg(code, lexer, _formatter()))


def highlight(code: str, lang: str) -> str:
    """`code` as highlighted HTML (plain, escaped text for an unknown language)."""
    return _format(code, _lexer(lang.lower()))


def highlight_lines(code: str, path: str) -> list[str]:
    """The lines of `code`, a file named `path`, each as highlighted HTML on its own (the
    formatter closes its spans at each line's end): as many as `code.split("\\n")` has."""
    lines = _format(code, _file_lexer(path)).split("\n")
    wanted = code.count("\n") + 1
    # (pygments ends its output with a newline of its own, and may drop a last empty line)
    return (lines + [""] * wanted)[:wanted]


def css() -> str:
    """The CSS of the highlighting (`.hl` and its token classes)."""
    return str(_formatter().get_style_defs(".hl"))
