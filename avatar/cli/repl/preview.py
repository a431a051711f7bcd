"""The session picker's preview: the last turns of the highlighted session, under the list.

A session's turns are read from its store (`Engine.transcript`) in a thread, once per session
while the picker is open: moving through the list never waits for a large session file; its
preview shows when read (`…` until then).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from avatar.cli.output.cells import clip
from avatar.core.errors import AvatarError
from avatar.policy.terminal_text import inert

if TYPE_CHECKING:
    from avatar.sessions.types import SessionInfo, Transcript

#: Lines of preview under the picker.
LINES = 6


def preview_lines(transcript: Transcript, width: int, limit: int = LINES) -> list[str]:
    """The last turns of `transcript`, one line each (the user's own words, the answer's
    first words, the tools called), cut to `width`."""
    lines: list[str] = []
    for m in transcript.messages:
        if m.role == "user" and (said := " ".join(m.said.split())):
            lines.append(f"› {said}")
        elif m.role == "assistant":
            text = " ".join(m.text.split())
            if text:
                lines.append(f"  {text}")
            if m.tool_calls:
                lines.append("  ✓ " + ", ".join(call.name for call in m.tool_calls[:4]))
    cut = [clip(line, width) for line in lines[-limit:]]
    return [inert(line) for line in cut]


class Previews:
    """Previews of sessions, read in a thread when first asked for (`get`); `changed` is
    called when one is ready (the picker redraws)."""

    def __init__(self, read: Callable[[SessionInfo], Transcript], changed: Callable[[], None]):
        self._read = read
        self._changed = changed
        self._ready: dict[str, list[str]] = {}
        self._reading: set[str] = set()
        self._tasks: set[asyncio.Future[None]] = set()

    def get(self, info: SessionInfo, width: int) -> list[str] | None:
        """The preview of `info`; None while it is being read."""
        if info.id in self._ready:
            return self._ready[info.id]
        if info.id not in self._reading:
            self._reading.add(info.id)
            task = asyncio.ensure_future(self._fetch(info, width))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return None

    async def _fetch(self, info: SessionInfo, width: int) -> None:
        loop = asyncio.get_running_loop()
        try:
            transcript = await loop.run_in_executor(None, self._read, info)
            lines = preview_lines(transcript, width) or ["(no turns yet)"]
        except (AvatarError, OSError, ValueError) as e:
            lines = [f"(cannot read it: {e})"]
        self._ready[info.id] = lines
        self._changed()
