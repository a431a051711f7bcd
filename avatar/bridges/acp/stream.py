"""Where each event from an ACP agent goes: the running turn, or the bridge's event sink.

The rule that keeps replayed history out of answers:
- while a `session/load` runs, and afterwards until the agent has been quiet for a moment
  (Gemini sends part of its replay after the load response), every update is replay: it is
  marked `replay=True` and emitted through `ctx.emit`;
- opening a session returns only once the replay has settled, and a prompt is only sent once
  it has (`send()` awaits `replay_settled()` too), so no prompt is ever in flight while
  history streams in, and nothing of the first answer is swallowed;
- with a turn open, updates go to that `Turn`; otherwise (titles or usage that arrive
  between turns) to `ctx.emit`;
- the rest of a turn its caller stopped listening to (cancelled: `close_turn(abandoned=True)`),
  which an agent may still be streaming, is dropped until the next turn or load;
- an agent's text outside any turn and any replay (a start-up banner it says unasked as a
  session opens) is no answer: it reaches `ctx.emit` as one `Notice`, and since such a banner
  may come a moment after the open's response, a session just opened waits for the agent to
  be quiet for `OPEN_QUIET` seconds before its first prompt (`opened()`), so the banner never
  lands in the first answer, nor in avatar's copy of it, nor in a handoff.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from avatar.bridges.base import EventSink
from avatar.bridges.turn import Turn
from avatar.core.events import BaseEvent, Notice, TextDelta, TitleChanged, Usage

#: How long the agent must stay quiet after a session opens before the first prompt goes.
OPEN_QUIET = 0.02
#: The longest an agent's chatter after an open can hold the first prompt back.
OPEN_LIMIT = 0.5


class UpdateRouter:
    """Routes translated events to the open turn, or to the sink (marked replay while loading)."""

    def __init__(self, emit: EventSink, name: str = "the agent") -> None:
        self.emit = emit
        self.name = name
        self._aside: list[str] = []  # text said outside any turn, not yet noticed
        self._turn: Turn | None = None
        self._abandoned = False  # the last turn was cancelled unheard: its rest is dropped
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
            elif self._abandoned and not isinstance(event, TitleChanged | Usage):
                continue  # (what it still says of a cancelled answer: nobody's answer)
            elif isinstance(event, TextDelta):
                self._aside.append(event.text)
                if self._settled.is_set():
                    self._say_aside()
            else:
                self.emit(event)

    def _say_aside(self) -> None:
        """What the agent said outside any turn, as one notice."""
        text, self._aside = "".join(self._aside).strip(), []
        if text:
            self.emit(Notice(message=f"{self.name} said, outside any turn: {text}"))

    def _touch(self) -> None:
        self._last_activity = asyncio.get_running_loop().time()

    # -- turns ------------------------------------------------------------------------------

    @property
    def turn(self) -> Turn | None:
        """The turn events go to, while a prompt is in flight."""
        return self._turn

    def open_turn(self) -> Turn:
        """Start a new turn; events go to it until `close_turn()`."""
        self._say_aside()
        self._abandoned = False
        self._turn = Turn()
        return self._turn

    def close_turn(self, turn: Turn, *, abandoned: bool = False) -> None:
        """`turn` is over: later events go to the sink (a newer turn is left alone);
        `abandoned`: its caller stopped listening and it was cancelled, so what the agent
        still says of it is dropped until the next turn or load."""
        turn.finish()
        if self._turn is turn:
            self._turn = None
            self._abandoned = abandoned

    # -- replay -----------------------------------------------------------------------------

    def begin_replay(self) -> None:
        """A load starts: everything from now on is history until `settle()` finishes."""
        self._cancel_settle()
        self._replaying = True
        self._abandoned = False
        self._settled.clear()
        self._touch()

    def opened(self, guard: bool = True) -> None:
        """A session was just opened: the next prompt waits until the agent has been quiet
        for `OPEN_QUIET` s, and what it says meanwhile is no answer (see the module
        docstring); `guard=False`: an agent known to say nothing then (quirk `quiet_open`)
        is prompted at once."""
        if guard and not self._replaying:
            self._settled.clear()
            self._touch()
            self.settle(OPEN_QUIET, OPEN_LIMIT)

    def settle(self, quiet: float, limit: float) -> None:
        """End the replay window once the agent has been quiet for `quiet` s (at most `limit` s)."""
        self._cancel_settle()
        self._settle_task = asyncio.get_running_loop().create_task(self._settle(quiet, limit))

    def end_replay(self) -> None:
        """End the replay window now (a failed load, or the bridge stops)."""
        self._cancel_settle()
        self._replaying = False
        self._settled.set()
        self._say_aside()

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
