"""One block of markdown drawn for a terminal, as the agents' own terminals draw it: tables in
box drawing, numbered lists with their numbers as written (`1.`), nesting kept, code blocks
highlighted, and no blank line above or below the block (the screen spaces blocks itself).

Imports rich: load it only when an answer is drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich import box
from rich.markdown import (
    Heading,
    ListElement,
    ListItem,
    Markdown,
    MarkdownElement,
    TableElement,
)
from rich.measure import Measurement
from rich.segment import Segment
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from avatar.core.markdown_blocks import Block

if TYPE_CHECKING:
    from rich.console import (
        Console,
        ConsoleOptions,
        JustifyMethod,
        RenderableType,
        RenderResult,
    )

CODE_THEME = "monokai"
_UNBOUNDED = 1_000_000


class _BoxTable(TableElement):
    """A markdown table in box drawing, its header bold; as records (one field a line, each
    row under a rule) when even its narrowest drawing is wider than the terminal, where rich
    would cut every cell to `…`."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = Table(box=box.ROUNDED, show_edge=True, border_style="dim")
        headings: list[Text] = []
        if self.header is not None and self.header.row is not None:
            for column in self.header.row.cells:
                heading = column.content.copy()
                heading.stylize("bold")
                headings.append(heading)
                table.add_column(heading)
        rows = [[c.content for c in row.cells] for row in self.body.rows] if self.body else []
        for cells in rows:
            table.add_row(*cells)
        # Measured without the terminal's limit (a measurement is clamped to it).
        unbounded = options.update(max_width=_UNBOUNDED)
        if not headings or Measurement.get(console, unbounded, table).minimum <= options.max_width:
            yield table
            return
        for cells in rows:
            yield Text("─" * min(options.max_width, 20), style="dim")
            for heading, cell in zip(headings, cells, strict=False):
                yield Text.assemble(heading, ": ", cell)


class _Heading(Heading):
    """Every heading at the left margin, as the agents' terminals draw them."""

    LEVEL_ALIGN: ClassVar[dict[str, JustifyMethod]] = dict.fromkeys(Heading.LEVEL_ALIGN, "left")


class _NumberedList(ListElement):
    """A list whose numbers read `1.`, `2.` (rich draws them without the dot)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.list_type == "bullet_list_open":
            yield from super().__rich_console__(console, options)
            return
        first = 1 if self.list_start is None else self.list_start
        width = len(f"{first + len(self.items) - 1}.") + 2
        for number, item in enumerate(self.items, first):
            yield from _numbered(item, console, options, f"{number}.", width)


def _numbered(
    item: ListItem, console: Console, options: ConsoleOptions, label: str, width: int
) -> RenderResult:
    lines = console.render_lines(
        item.elements, options.update(width=options.max_width - width), style=item.style
    )
    style = console.get_style("markdown.item.number", default="none")
    for n, line in enumerate(lines):
        yield Segment(label.rjust(width - 1) + " " if n == 0 else " " * width, style)
        yield from line
        yield Segment.line()


class AnswerMarkdown(Markdown):
    """rich's Markdown with boxed tables and dotted numbers; links as text and address."""

    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements,
        "heading_open": _Heading,
        "table_open": _BoxTable,
        "bullet_list_open": _NumberedList,
        "ordered_list_open": _NumberedList,
    }


class _Trimmed:
    """A renderable without the blank lines rich puts above and below some blocks."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = console.render_lines(self.inner, options, pad=False)
        while lines and not "".join(s.text for s in lines[0]).strip():
            lines.pop(0)
        while lines and not "".join(s.text for s in lines[-1]).strip():
            lines.pop()
        for line in lines:
            yield from line
            yield Segment.line()


def render_block(block: Block) -> RenderableType:
    """The renderable of one complete block."""
    if block.kind == "code":
        return Syntax(block.text, block.lang or "text", theme=CODE_THEME, word_wrap=True)
    return _Trimmed(AnswerMarkdown(block.text, code_theme=CODE_THEME, hyperlinks=False))
