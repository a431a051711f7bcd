"""A live session's events as the page's event stream (server-sent events): the hub's event
dicts as they are, plus what the page cannot make itself. A run of streamed text is followed
by the same text rendered as the HTML export renders a message (`rendered`: code fenced in
it highlighted), so the page streams plain text and then shows it finished; a tool call that
writes or edits a file carries its change as a diff (`diff_html`, from `avatar.core.diffs`,
the REPL's reading of it: numbered by the file's lines, named relative to the project).
History an agent re-sends while a session reopens (events marked `replay`) is left out: the
page shows the session's conversation before it went live from its store, once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from html import escape
from pathlib import Path
from typing import Any

from avatar.core.diffs import FileChange, changes_of, changes_reported, locate, shown_from
from avatar.core.events import FileDiff, ToolCallStarted
from avatar.library.export.html import message_text

Event = dict[str, Any]

#: Events that do not end a run of text (they come between its pieces).
_INSIDE_TEXT = {"text", "thinking", "usage", "commands", "mode", "title"}
#: Seconds between comments that keep an idle stream open through proxies and timers.
KEEPALIVE = 15.0


class Renderer:
    """The events of one stream, with `rendered` and `diff_html` added (module docstring)."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd  #: the session's project: diffs name its files relative to it
        self._text: list[str] = []

    def feed(self, event: Event) -> list[Event]:
        """What the page gets for `event`: a `rendered` event first when it ends a run of
        text, then the event (with its diff, for a file change); nothing for a replayed one."""
        if event.get("replay"):
            return []
        kind = event.get("type")
        out: list[Event] = []
        if kind == "text":
            self._text.append(str(event.get("text", "")))
        elif kind not in _INSIDE_TEXT:
            out += self.flush()
        diff = _diff_html(event, self.cwd)
        out.append({**event, "diff_html": diff} if diff else event)
        return out

    def flush(self) -> list[Event]:
        """The `rendered` event of the text streamed since the last one, if any."""
        text, self._text = "".join(self._text), []
        return [{"type": "rendered", "html": message_text(text)}] if text.strip() else []


def _changes(event: Event) -> list[FileChange]:
    kind = event.get("type")
    reported = [FileDiff(**d) for d in event.get("diffs") or []]
    if reported:
        return changes_reported(reported)
    if kind == "tool_call_started" and isinstance(event.get("input"), dict):
        return changes_of(ToolCallStarted(id="", name="", input=event["input"]))
    return []


def _diff_html(event: Event, cwd: Path) -> str:
    if event.get("type") not in ("tool_call_started", "tool_call_updated", "tool_call_finished"):
        return ""
    parts = []
    for change in (shown_from(locate(c, cwd), cwd) for c in _changes(event)):
        added = removed = 0
        lines = []
        for hunk in change.hunks():
            for row in hunk:
                added, removed = added + (row.sign == "+"), removed + (row.sign == "-")
                number = change.number(row)
                cls = {"+": "add", "-": "del", " ": "ctx"}[row.sign]
                lines.append(
                    f'<span class="{cls}"><i>{number if number is not None else ""}</i>'
                    f"{row.sign} {escape(row.text)}</span>"
                )
            lines.append('<span class="gap">⋯</span>')
        head = f"{escape(change.path)}  +{added} -{removed}"
        body = "".join(lines[:-1])
        parts.append(f'<div class="diff"><div class="path">{head}</div><pre>{body}</pre></div>')
    return "".join(parts)


def frame(event: Event) -> str:
    """One server-sent event holding `event` as JSON."""
    return f"data: {json.dumps(event, ensure_ascii=False, default=str)}\n\n"


async def frames(events: AsyncIterator[Event], cwd: Path) -> AsyncIterator[str]:
    """The event stream of a subscription to a session in `cwd`: each event as `Renderer`
    gives it, with a comment line when nothing happened for `KEEPALIVE` seconds."""
    renderer = Renderer(cwd)
    pending = asyncio.ensure_future(anext(events))
    try:
        while True:
            done, _ = await asyncio.wait({pending}, timeout=KEEPALIVE)
            if not done:
                yield ": keepalive\n\n"
                continue
            try:
                event = pending.result()
            except StopAsyncIteration:
                for last in renderer.flush():
                    yield frame(last)
                return
            for shown in renderer.feed(event):
                yield frame(shown)
            pending = asyncio.ensure_future(anext(events))
    finally:
        pending.cancel()
