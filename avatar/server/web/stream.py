"""A live session's events as the page's event stream (server-sent events): the hub's event
dicts as they are, plus what the page cannot make itself.

An answer is drawn as the terminal draws it, block by block as it streams
(`avatar.core.markdown_blocks`): after each piece of text that completes a paragraph, list,
table, quote, heading or code block, a `blocks` event carries those blocks rendered
(`avatar.library.export.markdown`: what the model wrote escaped, code highlighted) and the
text of the block in progress (`tail`), which the page shows as plain text until its block
is complete; at the end of the run of text, one with `end` carries the rest. A tool call that
writes or edits a file carries its change as a diff (`diff_html`, `diffs`). History an agent
re-sends while a session reopens (events marked `replay`) is left out: the page shows the
session's conversation before it went live from its store, once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from avatar.core.markdown_blocks import Block, BlockSplitter
from avatar.library.export.markdown import block_html
from avatar.server.web.diffs import diff_html

Event = dict[str, Any]

#: Events that do not end a run of text (they come between its pieces).
_INSIDE_TEXT = {"text", "thinking", "usage", "commands", "mode", "title"}
#: Seconds between comments that keep an idle stream open through proxies and timers.
KEEPALIVE = 15.0


class Renderer:
    """The events of one stream, with `blocks` events and diffs added (module docstring)."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd  #: the session's project: diffs name its files relative to it
        self._blocks = BlockSplitter()
        self._streaming = False  # text came since the last `end`

    def feed(self, event: Event) -> list[Event]:
        """What the page gets for `event`: the event (with its diff, for a file change),
        after the end of a run of text it closes, and before the blocks it completes;
        nothing for a replayed one."""
        if event.get("replay"):
            return []
        kind = event.get("type")
        if kind == "text":
            self._streaming = True
            done = self._blocks.feed(str(event.get("text", "")))
            return [event, self._shown(done, end=False)] if done else [event]
        out = [] if kind in _INSIDE_TEXT else self.flush()
        diff = diff_html(event, self.cwd)
        out.append({**event, "diff_html": diff} if diff else event)
        return out

    def flush(self) -> list[Event]:
        """The end of the run of text streamed since the last one, if any: its last blocks."""
        if not self._streaming:
            return []
        self._streaming = False
        return [self._shown(self._blocks.flush(), end=True)]

    def _shown(self, blocks: list[Block], *, end: bool) -> Event:
        html = "".join(block_html(b) for b in blocks)
        tail = "" if end else self._blocks.tail
        return {"type": "blocks", "html": html, "tail": tail, "end": end}


def frame(event: Event) -> str:
    """One server-sent event holding `event` as JSON."""
    return f"data: {json.dumps(event, ensure_ascii=False, default=str)}\n\n"


async def frames(events: AsyncIterator[Event], cwd: Path, past: int = 0) -> AsyncIterator[str]:
    """The event stream of a subscription to a session in `cwd` whose first `past` events
    happened before it: each event as `Renderer` gives it, a `caught_up` event once the past
    ones are out (the page notifies only of what happens after), and a comment line when
    nothing happened for `KEEPALIVE` seconds."""
    renderer = Renderer(cwd)
    if not past:
        yield frame({"type": "caught_up"})
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
            past -= 1
            if past == 0:
                yield frame({"type": "caught_up"})
            pending = asyncio.ensure_future(anext(events))
    finally:
        pending.cancel()
