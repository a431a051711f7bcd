"""What the REPL prints between prompts: answers as markdown, one line per tool call, diffs of
edits, thinking folded to one dim line (in full after Ctrl-T), notices and errors in their own
style.

Answers stream block by block (`avatar.core.markdown_blocks`): a paragraph, list, table, quote
or code block is printed once it is complete, drawn as markdown (tables in box drawing, code
highlighted: `avatar.cli.output.markdown`), and the block in progress is the live tail the
prompt shows above its input line (`live_tail`). Nothing here ever writes on the prompt line:
under prompt-toolkit's `patch_stdout` every write lands above the prompt, which is redrawn
after it.

Everything printed passes one render hook (`_InertText`) that makes the text of what is drawn
inert (`avatar.policy.terminal_text`), after markdown and highlighting have laid it out and
before rich adds its styles: an escape sequence in an answer, a title or an agent's stderr
shows as text, and rich's styling is the only escape code on the screen. Markdown links are
drawn as their text and address, not as terminal hyperlinks whose target the text may hide.
This holds without a terminal too (a script driving the REPL): what the REPL prints is a
rendering for a person, not the model's text as data (that is `chat`'s stdout).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from avatar.cli.output.render import session_line
from avatar.cli.repl.mentions import strip_inlined
from avatar.core.diffs import (
    Edit,
    EditLog,
    FileChange,
    against_disk,
    changes_of,
    changes_reported,
    locate,
    shown_from,
)
from avatar.core.markdown_blocks import Block, BlockSplitter
from avatar.policy.terminal_text import inert

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import (
        Console,
        ConsoleOptions,
        ConsoleRenderable,
        RenderableType,
        RenderHook,
    )
    from rich.segment import Segment

    from avatar.core.events import (
        BaseEvent,
        Error,
        FileDiff,
        ToolCallFinished,
        ToolCallStarted,
        ToolCallUpdated,
    )

# How much of a diff is shown inline; `/diff N` shows the whole of edit N.
DIFF_LINES = 12
SUMMARY_CHARS = 100
# Words that make a stderr line the reason an agent died (rather than a stray warning).
_REASON_WORDS = ("error", "fatal", "panic", "killed", "exception", "denied", "not found", "failed")


def reason_line(detail: str | None) -> str:
    """The line of an agent's stderr tail that explains a failure: the last one that reads
    like an error, else the last one."""
    lines = [line.strip() for line in (detail or "").splitlines() if line.strip()]
    for line in reversed(lines):
        if any(word in line.lower() for word in _REASON_WORDS):
            return line
    return lines[-1] if lines else ""


class _CurrentStdout:
    """`sys.stdout` as it is at each write: prompt-toolkit's `patch_stdout` replaces it with a
    proxy that prints above the prompt, and the console must write through that proxy."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()

    def isatty(self) -> bool:
        return sys.__stdout__.isatty() if sys.__stdout__ else False

    def fileno(self) -> int:
        return sys.__stdout__.fileno() if sys.__stdout__ else 1


class _Shown:
    """A renderable drawn with its text made inert (rich's control segments, which move the
    cursor for rich itself, pass as they are)."""

    def __init__(self, inner: ConsoleRenderable) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        from rich.segment import Segment

        for seg in console.render(self.inner, options):
            yield seg if seg.control else Segment(inert(seg.text), seg.style)


class _InertText:
    """The console's render hook: every renderable printed is drawn through `_Shown`."""

    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_Shown(r) for r in renderables]


class Screen:
    """Renders events for a person at a terminal (or, without colours, a pipe)."""

    def __init__(self, out: TextIO | None = None, *, live_tail: bool | None = None) -> None:
        from prompt_toolkit.utils import is_dumb_terminal
        from rich.console import Console

        self.out: TextIO = out or _CurrentStdout()  # type: ignore[assignment]
        self.console: Console = Console(file=self.out, highlight=False, soft_wrap=False)
        # (duck-typed: subclassing rich's RenderHook would import rich with this module)
        self.console.push_render_hook(cast("RenderHook", _InertText()))
        self._blocks = BlockSplitter()  # the answer streaming in, cut into blocks
        #: Whether the prompt can show the block in progress (a terminal that redraws). A dumb
        #: terminal cannot: there the answer is printed line by line as it streams, wrapped
        #: at the width, so a slow answer still shows as it comes.
        self.live = not is_dumb_terminal() if live_tail is None else live_tail
        self._raw = ""  # (dumb terminal) the line being streamed, not printed yet
        self._drawn = 0  # blocks of the current answer printed so far
        self._thinking: list[str] = []
        self.full_thinking = False  # Ctrl-T: thinking in full rather than one line
        self._tools: dict[str, ToolCallStarted] = {}
        self._reported: dict[str, list[FileDiff]] = {}  # each call's changes, as last reported
        self._shown: dict[str, Edit] = {}  # the changes drawn in a call's permission question
        self._refused: set[str] = set()  # calls refused at the menu, whose answer said so
        self.edits = EditLog()  # every edit of this run, for `/diff`
        self.cwd = Path.cwd()  # where the session runs: a relative path in an edit is there
        self.turn_started: float | None = None
        self.last_output = time.monotonic()
        self.activity = ""  # what is happening now, for the spinner
        self.tokens = 0
        #: This turn's tokens as the engine counts them (`status().numbers.turn_tokens`), for
        #: the line that ends a turn: one count on every screen and in `ps`. None: the
        #: screen's own count (no engine behind it).
        self.turn_tokens: Callable[[], int | None] | None = None
        self._answered = False
        self._muted = False  # the turn was interrupted: the rest of its answer is not shown

    # -- output primitives ------------------------------------------------------------------

    def print(self, *items: RenderableType, style: str | None = None) -> None:
        """Print renderables (or markup-free strings) on their own lines."""
        self.console.print(*items, style=style, markup=False)
        self.out.flush()
        self.last_output = time.monotonic()

    @contextlib.contextmanager
    def together(self) -> Iterator[None]:
        """What is printed inside, written to the terminal at once: above a running prompt
        each write is a repaint after which prompt-toolkit waits a moment
        (`avatar.cli.repl.reading.WRITE_GAP`), so lines written one by one would show that
        much apart."""
        with self.console.capture() as captured:
            yield
        self.out.write(captured.get())
        self.out.flush()
        self.last_output = time.monotonic()

    def line(self, text: str, style: str | None = None) -> None:
        """One line of plain text (no markup interpretation)."""
        from rich.text import Text

        self.print(Text(text, style=style or ""))

    def user_line(self, text: str) -> None:
        """What the user sent, as the prompt showed it: `› ` before its first line, its
        other lines under it."""
        self.line("› " + text.replace("\n", "\n  "), "bold")

    # -- answer text ------------------------------------------------------------------------

    def _text(self, chunk: str) -> None:
        self._fold_thinking()
        if not self.live:
            self._stream(chunk)
            return
        for block in self._blocks.feed(chunk):
            self._draw(block)
        self.last_output = time.monotonic()

    def _stream(self, chunk: str) -> None:
        """A dumb terminal's answer: each line as it completes, a long one as it wraps."""
        *done, self._raw = (self._raw + chunk).split("\n")
        width = max(self.console.width - 4, 20)
        while len(self._raw) > width:
            cut = self._raw.rfind(" ", 0, width)
            cut = cut if cut > width // 2 else width
            done.append(self._raw[:cut])
            self._raw = self._raw[cut:].lstrip(" ")
        for line in done:
            self.line(line)

    @property
    def pending(self) -> str:
        """The line being streamed, not printed yet (the status line shows its end)."""
        return self._raw or self._blocks.line

    def live_tail(self, width: int, rows: int = 4) -> str:
        """The last `rows` lines, at most `width` wide, of the block in progress (its
        markdown source): what the prompt shows above its input line until it is drawn."""
        from avatar.cli.output.cells import cut

        text = self._blocks.tail[-width * rows * 2 :]
        lines: list[str] = []
        for line in text.split("\n")[-rows:]:
            lines.extend(cut(line, width))
        return inert("\n".join(lines[-rows:]).rstrip())

    def _draw(self, block: Block) -> None:
        from avatar.cli.output.markdown import render_block

        if self._drawn:
            self.line("")  # blocks of one answer are a blank line apart
        self._drawn += 1
        self.print(render_block(block))

    def flush(self) -> None:
        """Print what is held back (the block in progress, an unclosed code block)."""
        self._fold_thinking()
        if self._raw:
            line, self._raw = self._raw, ""
            self.line(line)
        for block in self._blocks.flush():
            self._draw(block)
        self._drawn = 0

    def _fold_thinking(self) -> None:
        if self._thinking:
            whole = "".join(self._thinking).strip()
            self._thinking = []
            if self.full_thinking:
                self.line(f"thinking: {whole}", "dim italic")
                return
            text = " ".join(whole.split())
            short = text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"
            self.line(f"thinking: {short}", "dim italic")

    # -- events -----------------------------------------------------------------------------

    def on_event(self, event: BaseEvent) -> None:
        """Render one event (replayed history is shown by `history()`, not here)."""
        import avatar.core.events as ev

        if event.replay:
            return
        answers = (
            ev.TextDelta,
            ev.ThinkingDelta,
            ev.ToolCallStarted,
            ev.ToolCallFinished,
            ev.Error,
        )
        self._answered = self._answered or isinstance(event, answers)
        if isinstance(event, (ev.TextDelta, ev.ThinkingDelta)) and self._muted:
            return
        if isinstance(event, ev.TextDelta):
            self._text(event.text)
            return
        if isinstance(event, ev.ThinkingDelta):
            self._thinking.append(event.text)
            self.activity = "thinking"
            return
        if isinstance(event, ev.Usage):  # prints nothing: the block in progress goes on
            self.tokens = (event.input_tokens or 0) + (event.output_tokens or 0) or self.tokens
            return
        if isinstance(event, (ev.TitleChanged, ev.CommandsAvailable, ev.ModeChanged, ev.Plan)):
            # Shown elsewhere, or not at all: an agent announcing its commands or the
            # session's title mid-answer (claude-agent-acp does) must not cut the paragraph
            # in progress in two ("Saw" above "the listing.").
            return
        self.flush()
        if isinstance(event, ev.SessionStarted):
            self.cwd = Path(event.cwd) if event.cwd else self.cwd
            self.line(session_line(event), "dim")
        elif isinstance(event, ev.UserMessage):
            self.user_line(event.text)  # steering, as the model now sees it
        elif isinstance(event, ev.ToolCallStarted):
            self._tools[event.id] = event
            if event.diffs:
                self._reported[event.id] = event.diffs
            self.activity = f"running {self.short(event.title or event.name)}"
        elif isinstance(event, ev.ToolCallUpdated):
            self._tool_update(event)
        elif isinstance(event, ev.ToolCallFinished):
            self._tool_done(event)
        elif isinstance(event, ev.PermissionRequested):
            if event.id not in self._tools:  # a call announced only by its question (Gemini)
                self._tools[event.id] = ev.ToolCallStarted(
                    id=event.id, name=event.kind or "tool", title=event.title, kind=event.kind
                )
            if event.diffs and event.id not in self._reported:
                self._reported[event.id] = event.diffs  # what the question shows
            if event.decision == "deny" and event.id not in self._refused:  # (else said)
                self.line(f"denied: {self.short(event.title)}", "yellow")
        elif isinstance(event, ev.Notice):
            self.line(f"notice: {event.message}", "yellow" if event.level == "warning" else "dim")
        elif isinstance(event, ev.Error):
            self.error(event)
        elif isinstance(event, ev.TurnFinished):
            self._turn_done(event.stop_reason)

    def error(self, event: Error) -> None:
        """An error as one red line, with the reason from the agent's stderr when there is one."""
        reason = reason_line(event.detail)
        suffix = f" ({reason})" if reason and reason not in event.message else ""
        self.line(f"avatar: {event.message}{suffix}", "bold red")

    def short(self, title: str) -> str:
        """A tool call's `title` with the session's directory left out of its paths, as a
        person reads them (Claude Code's titles name absolute paths)."""
        return title.replace(f"{self.cwd}/", "")

    def started_call(self, call_id: str) -> ToolCallStarted | None:
        """The running tool call `call_id`, as it was announced (None when unknown)."""
        return self._tools.get(call_id)

    def _tool_update(self, event: ToolCallUpdated) -> None:
        if event.title and event.id in self._tools:
            self._tools[event.id] = replace(self._tools[event.id], title=event.title)
        if not event.diffs:
            return
        number = self.edits.number_of(event.id)
        if number is not None:  # reported again once made (with its lines): `/diff` shows this
            title = self.edits.edits[number - 1].title
            self.edits.record(event.id, self._edit(title, changes_reported(event.diffs)))
        elif event.id in self._tools:
            self._reported[event.id] = event.diffs
        else:  # the change of a call that has finished already, reported after its end
            self._show_edit(event.id, event.id, changes_reported(event.diffs))

    def _edit(self, title: str, changes: list[FileChange]) -> Edit:
        return Edit(title, tuple(shown_from(locate(c, self.cwd), self.cwd) for c in changes))

    def _show_edit(self, call_id: str, title: str, changes: list[FileChange]) -> None:
        from avatar.cli.repl.diff_view import render_edit

        edit = self._edit(title, changes)
        self.print(render_edit(edit, self.edits.record(call_id, edit), DIFF_LINES))

    def _changes(self, started: ToolCallStarted | None, diffs: list[FileDiff]) -> list[FileChange]:
        # The agent's own report first: it knows the change it made (and where).
        return changes_reported(diffs) if diffs else changes_of(started) if started else []

    def proposed(self, call_id: str, asked: list[FileDiff] | None = None) -> Edit | None:
        """What the running tool call `call_id` would change, as far as is known yet (`asked`:
        the changes its permission question states); a whole file's new content is shown
        against the file on disk, which it would replace."""
        started = self._tools.get(call_id)
        changes = self._changes(started, self._reported.get(call_id) or asked or [])
        changes = [against_disk(c, self.cwd) for c in changes]
        title = (started.title or started.name) if started else call_id
        return self._edit(title, changes) if changes else None

    def show_proposed(self, call_id: str, asked: list[FileDiff] | None = None) -> Edit | None:
        """Draw what tool call `call_id` would change (for its permission question), once:
        its result then refers to this diff instead of drawing it again."""
        from avatar.cli.repl.diff_view import render_edit

        edit = self.proposed(call_id, asked)
        if edit is not None:
            self.print(render_edit(edit, limit=DIFF_LINES + 8))
            self._shown[call_id] = edit
        return edit

    def refused(self, call_id: str) -> None:
        """Tool call `call_id` was refused at the permission menu, whose answer line says so
        (and what the agent is told): its denial and failed result are not said again."""
        self._refused.add(call_id)

    def _tool_done(self, event: ToolCallFinished) -> None:
        started = self._tools.pop(event.id, None)
        if event.id in self._refused and event.is_error:
            self._refused.discard(event.id)
            self._shown.pop(event.id, None)
            self.activity = "waiting for the model"
            return
        title = (started.title or started.name) if started else event.id
        first = next((line.strip() for line in event.output.splitlines() if line.strip()), "")
        first = self.short(first)
        summary = first if len(first) <= SUMMARY_CHARS else first[: SUMMARY_CHARS - 1] + "…"
        mark, style = ("✗", "red") if event.is_error else ("✓", "green")
        self.line(f"{mark} {self.short(title)}" + (f" — {summary}" if summary else ""), style)
        reported = self._reported.pop(event.id, [])
        changes = self._changes(started, event.diffs or reported)
        asked = self._shown.pop(event.id, None)
        if changes and not event.is_error and asked is not None:
            # Drawn in its question already: the result names it and numbers it for `/diff`
            # (as the agent reports it made, else as it was asked).
            edit = self._edit(title, changes) if event.diffs else replace(asked, title=title)
            number = self.edits.record(event.id, edit)
            added, removed = edit.counts()
            files = ", ".join(dict.fromkeys(c.path for c in edit.changes))
            self.line(f"  {files}  +{added} -{removed}  [{number}] (the diff above)", "dim")
        elif changes and not event.is_error:
            self._show_edit(event.id, title, changes)
        self.activity = "waiting for the model"

    def _turn_done(self, stop_reason: str) -> None:
        parts: list[str] = []
        if self.turn_started is not None:
            parts.append(f"{time.monotonic() - self.turn_started:.1f}s")
        tokens = self.turn_tokens() if self.turn_tokens is not None else self.tokens
        if tokens:
            parts.append(f"{tokens:,} tokens")
        if stop_reason not in ("end_turn",):
            parts.append(stop_reason.replace("_", " "))
        elif not self._answered and not self.tokens:
            parts = []  # nothing but notices (claude's /compact): no empty turn shown
        if parts:
            self.line("─ " + " · ".join(parts), "dim")
        self.turn_started = None
        self.activity = ""
        self._muted = False

    def interrupted(self) -> None:
        """The turn is being interrupted: what was shown of the answer stays, drawn now, and
        what the agent still sends of it until the turn ends is not shown."""
        self.flush()
        self._muted = True

    def begin_turn(self, at: float | None = None) -> None:
        """A turn starts (`at`: when it did, in `time.monotonic()` terms; else now): time it,
        and say what is awaited."""
        self._muted = False
        self.turn_started = time.monotonic() if at is None else at
        self.last_output = time.monotonic()
        self.activity = "waiting for the model"
        self.tokens = 0
        self._answered = False  # text, thinking, a tool call or an error was shown

    # -- history ----------------------------------------------------------------------------

    def history(self, messages: list[Any], *, limit: int = 6) -> None:
        """The last turns of a resumed session: user lines, answers condensed, tool calls as
        their one-line summaries."""
        # A user message is shown as typed: no attached file, handoff or agent's own context.
        said = {id(m): strip_inlined(m.said) for m in messages if m.role == "user"}
        shown = [m for m in messages if m.role == "assistant" or said.get(id(m))][-limit:]
        if not shown:
            return
        self.line("── earlier in this session", "dim")
        for m in shown:
            if m.role == "user":
                self.line(f"› {' '.join(said[id(m)].split())[:200]}", "bold")
                continue
            text = " ".join(m.text.split())
            if text:
                self.line(text if len(text) <= 300 else text[:299] + "…")
            for call in m.tool_calls:
                self.line(f"✓ {call.name}", "dim green")
        self.line("──", "dim")
