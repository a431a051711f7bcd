"""Where each event from an ACP agent goes: the running turn, or the bridge's event sink.

The rule that keeps replayed history out of answers:
- while a `session/load` runs, and afterwards until the agent has been quiet for a moment
  (Gemini sends part of its replay after the load response), every update is replay: it is
  marked `replay=True` and emitted through `ctx.emit`;
- opening a session returns only once the replay has settled, and a prompt is only sent once
  it has (`send()` awaits `replay_settled()` too), so no prompt is ever in flight while
  history streams in, and nothing of the first answer is swallowed;
- with a turn open, updates go to that `Turn`; otherwise (titles or usage that arrive
  between turns) to `ctx.emit`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from avatar.bridges.base import EventSink
from avatar.bridges.turn import Turn
from avatar.core.events import BaseEvent


class UpdateRouter:
    """Routes translated events to the open turn, or to the sink (marked replay while loading)."""

    def __init__(self, emit: EventSink) -> None:
        self.emit = emit
        self._turn: Turn | None = None
        self._replaying = False
        self._settled = asyncio.Event()
        self._settled.set()
        self._last_activity = 0.0
        self._settle_task: asyncio.Task[None] | None = None

    def deliver(self, events: Iterable[BaseEvent]) -> None:
        """Send events where they belong right now (any call counts as agent activity, even
        with nothing translated, so the replay window stays open while history streams)."""
        self._touch()
        for event in events:
            if self._replaying:
                event.replay = True
                self.emit(event)
            elif self._turn is not None:
                self._turn.put(event)
            else:
                self.emit(event)

    def _touch(self) -> None:
        self._last_activity = asyncio.get_running_loop().time()

    # -- turns ------------------------------------------------------------------------------

    @property
    def turn(self) -> Turn | None:
        """The turn events go to, while a prompt is in flight."""
        return self._turn

    def open_turn(self) -> Turn:
        """Start a new turn; events go to it until `close_turn()`."""
        self._turn = Turn()
        return self._turn

    def close_turn(self, turn: Turn) -> None:
        """`turn` is over: later events go to the sink (a newer turn is left alone)."""
        turn.finish()
        if self._turn is turn:
            self._turn = None

    # -- replay -----------------------------------------------------------------------------

    def begin_replay(self) -> None:
        """A load starts: everything from now on is history until `settle()` finishes."""
        self._cancel_settle()
        self._replaying = True
        self._settled.clear()
        self._touch()

    def settle(self, quiet: float, limit: float) -> None:
        """End the replay window once the agent has been quiet for `quiet` s (at most `limit` s)."""
        self._cancel_settle()
        self._settle_task = asyncio.get_running_loop().create_task(self._settle(quiet, limit))

    def end_replay(self) -> None:
        """End the replay window now (a failed load, or the bridge stops)."""
        self._cancel_settle()
        self._replaying = False
        self._settled.set()

    async def replay_settled(self) -> None:
        """Wait until no replay is streaming in."""
        await self._settled.wait()

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
        self._settle_task = None
        self.end_replay()

    def _cancel_settle(self) -> None:
        task, self._settle_task = self._settle_task, None
        if task is not None and not task.done():
            task.cancel()
