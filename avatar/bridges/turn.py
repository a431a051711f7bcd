"""One running turn, as an object: its events, its cancel request, and how it ended.

Both process-backed bridges (ACP and Claude stream-json) run a turn the same way: whatever
reads the agent puts events (and control signals) into the turn's queue, `send()` yields
them until the turn is finished, and `cancel()` marks the turn so that permission questions
asked meanwhile answer no and the end is reported as `cancelled`. Keeping that state in one
object per turn (instead of flags on the bridge) means a late item of an old turn can never
end or corrupt the next one: it lands in a queue nobody reads any more.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from avatar.core.events import BaseEvent, StopReason

SignalKind = Literal["done", "died", "cancel_timeout", "stopped"]


@dataclass(frozen=True)
class TurnSignal:
    """A control item in a turn's queue: the prompt ended, the agent died, cancel timed out,
    or the bridge stopped."""

    kind: SignalKind
    payload: Any = None


TurnItem = "BaseEvent | TurnSignal"


@dataclass(eq=False)
class Turn:
    """The state of one turn; a bridge holds at most one open `Turn` at a time."""

    events: asyncio.Queue[BaseEvent | TurnSignal] = field(default_factory=asyncio.Queue)
    cancel_requested: asyncio.Event = field(default_factory=asyncio.Event)
    finished: bool = False
    stop_reason: StopReason | None = None

    @property
    def cancelling(self) -> bool:
        """True once `request_cancel()` was called."""
        return self.cancel_requested.is_set()

    def request_cancel(self) -> bool:
        """Mark the turn as being cancelled; False when it already was (or has finished)."""
        if self.finished or self.cancel_requested.is_set():
            return False
        self.cancel_requested.set()
        return True

    def put(self, item: BaseEvent | TurnSignal) -> None:
        """Queue an event or signal for whoever reads the turn (dropped once it finished)."""
        if not self.finished:
            self.events.put_nowait(item)

    def finish(self, stop_reason: StopReason | None = None) -> None:
        """The turn is over: later items are dropped."""
        self.finished = True
        if stop_reason is not None:
            self.stop_reason = stop_reason
