"""Every event of one live session to each of its subscribed clients (both kinds of live
session compose one: `avatar.server.live`, `avatar.server.hosted`).

It keeps every event so far, so that a late client can be shown them (`replay`), or those
of the running turn only (`since_turn`: a client that shows the earlier turns from the
session's conversation). The last event of a subscription is `closed`, or none when the
client detached.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection

from avatar.server.shared import Event


class Broadcast:
    """See the module docstring."""

    def __init__(self) -> None:
        self.history: list[Event] = []  #: every event so far, for late subscribers
        self._queues: dict[str, asyncio.Queue[Event | None]] = {}
        self._turn_began = 0  # where the running (or next) turn's events start in `history`

    @property
    def clients(self) -> list[str]:
        """The clients subscribed now, in the order they came."""
        return list(self._queues)

    def subscribe(
        self, client: str, *, replay: bool, since_turn: bool, waiting: Collection[str] = ()
    ) -> AsyncIterator[Event]:
        """`client`'s events: what happened so far (`replay`), or since the running turn
        began (`since_turn`), or from now on only (neither: then the questions whose ids
        are in `waiting` all the same, being news to it); then each as it comes. A client
        subscribes once: subscribing again ends its earlier subscription."""
        self.drop(client)
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        if replay or since_turn:
            for event in self.history[self._turn_began if since_turn else 0 :]:
                queue.put_nowait(event)
        else:
            for event in self.history:
                if event.get("type") == "permission_asked" and event["id"] in waiting:
                    queue.put_nowait(event)
        self._queues[client] = queue
        return self._drain(queue)

    async def _drain(self, queue: asyncio.Queue[Event | None]) -> AsyncIterator[Event]:
        while True:
            event = await queue.get()
            if event is None:
                return
            yield event
            if event.get("type") == "closed":
                return

    def drop(self, client: str) -> bool:
        """End `client`'s subscription; False when it had none."""
        queue = self._queues.pop(client, None)
        if queue is None:
            return False
        queue.put_nowait(None)
        return True

    def publish(self, event: Event) -> None:
        """`event` to every subscriber, and kept for later ones."""
        self.history.append(event)
        for queue in self._queues.values():
            queue.put_nowait(event)

    def turn_begins(self) -> None:
        """The events published from now on are the next turn's (`since_turn`)."""
        self._turn_began = len(self.history)

    def end(self, reason: str | None = None) -> None:
        """The session ended: `closed` (saying `reason`, when given) to every subscriber,
        whose subscriptions end."""
        self.publish({"type": "closed", "reason": reason})
        self._queues.clear()
