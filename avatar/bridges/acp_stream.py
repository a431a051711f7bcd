"""Where each event from an ACP agent goes: the running turn, or the bridge's event sink.

The rule that keeps replayed history out of answers:
- while a `session/load` runs, and afterwards until the agent has been quiet for a moment
  (Gemini sends part of its replay after the load response), every update is replay: it is
  marked `replay=True` and emitted through `ctx.emit`;
- opening a session returns only once the replay has settled, and a prompt is only sent once
  it has (`send()` awaits `replay_settled()` too), so no prompt is ever in flight while
  history streams in, and nothing of the first answer is swallowed;
- with a turn open, updates go to that turn's queue; otherwise (titles or usage that arrive
  between turns) to `ctx.emit`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from avatar.bridges.base import EventSink
from avatar.events import BaseEvent


@dataclass(frozen=True)
class TurnSignal:
    """A control item in a turn's queue: the prompt ended, the agent died, cancel timed out."""

    kind: str
    payload: Any = None


TurnItem = BaseEvent | TurnSignal


class UpdateRouter:
    """Routes translated events to the open turn, or to the sink (marked replay while loading)."""

    def __init__(self, emit: EventSink) -> None:
        self.emit = emit
        self._turn: asyncio.Queue[TurnItem] | None = None
        self._replaying = False
        self._settled = asyncio.Event()
        self._settled.set()
        self._last_activity = 0.0
        self._settle_task: asyncio.Task[None] | None = None
        self.replayed = 0  # events marked replay by the last load (tests and status)

    # -- activity ---------------------------------------------------------------------------

    def touch(self) -> None:
        """Note that the agent just sent something (any update counts, even untranslated)."""
        self._last_activity = asyncio.get_running_loop().time()

    def deliver(self, events: Iterable[BaseEvent]) -> None:
        """Send events where they belong right now."""
        self.touch()
        for event in events:
            if self._replaying:
                event.replay = True
                self.replayed += 1
                self.emit(event)
            elif self._turn is not None:
                self._turn.put_nowait(event)
            else:
                self.emit(event)

    # -- turns ------------------------------------------------------------------------------

    @property
    def in_turn(self) -> bool:
        """True while a prompt is in flight."""
        return self._turn is not None

    def open_turn(self) -> asyncio.Queue[TurnItem]:
        """Start collecting events for a new turn."""
        self._turn = asyncio.Queue()
        return self._turn

    def close_turn(self) -> None:
        """Stop collecting; later events go to the sink."""
        self._turn = None

    def signal(self, signal: TurnSignal) -> None:
        """Put a control item into the open turn (ignored when no turn is open)."""
        if self._turn is not None:
            self._turn.put_nowait(signal)

    # -- replay -----------------------------------------------------------------------------

    def begin_replay(self) -> None:
        """A load starts: everything from now on is history until `settle()` finishes."""
        self.cancel_settle()
        self._replaying = True
        self.replayed = 0
        self._settled.clear()
        self.touch()

    def settle(self, quiet: float, limit: float) -> None:
        """End the replay window once the agent has been quiet for `quiet` s (at most `limit` s)."""
        self.cancel_settle()
        self._settle_task = asyncio.get_running_loop().create_task(self._settle(quiet, limit))

    def end_replay(self) -> None:
        """End the replay window now (a failed load; nothing more will come)."""
        self.cancel_settle()
        self._finish_replay()

    async def _settle(self, quiet: float, limit: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        while True:
            now = loop.time()
            wake = min(self._last_activity + quiet, deadline)
            if now >= wake:
                break
            await asyncio.sleep(wake - now)
        # Not in a `finally`: a cancelled settle belongs to a newer load that is still replaying.
        self._finish_replay()

    def _finish_replay(self) -> None:
        self._replaying = False
        self._settled.set()

    def cancel_settle(self) -> None:
        """Drop a pending settle task (a new load, or the bridge stops)."""
        task, self._settle_task = self._settle_task, None
        if task is not None and not task.done():
            task.cancel()

    @property
    def replaying(self) -> bool:
        """True while updates are taken as replayed history."""
        return self._replaying

    async def replay_settled(self) -> None:
        """Wait until no replay is streaming in."""
        await self._settled.wait()
