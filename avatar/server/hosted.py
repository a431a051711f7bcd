"""A live session a REPL runs in its own process and lists with the server (`{"op": "host"}`,
`avatar.server.protocol`): `avatar ps` shows it and `avatar attach` reaches it as any live
session (`Shared`), while its engine, and every command the REPL has, stay in the REPL.

The REPL (`avatar.server.hosting`) streams what happens, the server relays it to the
attached clients (`Broadcast`) and sends back what they ask for: their prompts (the REPL
queues them with its own and runs them in order), their answers to a permission question
(the first answer wins: the REPL decides between its own menu and theirs, and says who
answered), a cancel, and the conversation so far for a client that joins. When the REPL
leaves, or the server stops, the session ends for its clients.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from avatar.core.errors import AvatarError
from avatar.server.broadcast import Broadcast
from avatar.server.shared import Event, LiveInfo, State, turn_ended

if TYPE_CHECKING:
    from avatar.policy.permissions import Answer, Refusal
    from avatar.server.hub import Hub
    from avatar.server.peer import Peer

_STATES: tuple[State, ...] = ("idle", "turn", "permission")
#: Seconds a REPL has to send the conversation to a client joining (its loop is not held up
#: for longer than that by anything but a hang).
JOIN_WITHIN = 10.0


class HostedSession:
    """See the module docstring; made by `host()` for one REPL's connection."""

    def __init__(self, peer: Peer, frame: dict[str, Any]) -> None:
        self.peer = peer
        #: The REPL's own name among the clients (`repl:<pid>`).
        self.owner = str(frame.get("client") or f"repl:{peer.pid}")
        self.since = float(frame.get("since") or time.time())
        self.broadcast = Broadcast()
        self._info: dict[str, Any] = dict(frame.get("info") or {})
        self._started: dict[str, Any] | None = frame.get("started")
        self._asked: set[str] = set()  # questions waiting for an answer
        self._prompts: dict[str, deque[asyncio.Future[Event]]] = {}  # by client, in order
        self._joining: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self._numbers = itertools.count(1)
        self._in_turn = False
        self._closed = False
        running = frame.get("running")  # (it registered during a turn: the turn's start)
        if isinstance(running, dict):
            self._publish(running)

    # ----- what it is (`Shared`) ----------------------------------------------------------

    @property
    def session_id(self) -> str:
        """The REPL's session id now."""
        return str(self._info.get("session_id") or "")

    @property
    def closed(self) -> bool:
        """True once the REPL left or the server stopped."""
        return self._closed

    @property
    def state(self) -> State:
        """idle, in a turn, or waiting on a permission question (as the REPL says)."""
        state = self._info.get("state")
        return state if state in _STATES else "idle"

    @property
    def busy(self) -> bool:
        """True while a turn runs or prompts wait in the REPL."""
        return self.state != "idle" or bool(self._info.get("queued"))

    def info(self) -> LiveInfo:
        """What `avatar ps` shows: the REPL's own figures, with the REPL and the clients
        attached as its clients."""
        info = self._info
        return LiveInfo(
            provider=str(info.get("provider") or ""),
            session_id=self.session_id,
            project=str(info.get("project") or ""),
            state=self.state,
            model=info.get("model"),
            tokens=info.get("tokens"),
            since=self.since,
            clients=[self.owner, *self.broadcast.clients],
            queued=int(info.get("queued") or 0),
            numbers=dict(info.get("numbers") or {}),
        )

    def started(self) -> dict[str, Any] | None:
        """How the REPL's session was opened (its latest `session` event)."""
        return self._started

    # ----- clients ------------------------------------------------------------------------

    async def join(
        self, client: str, *, answers: bool = True
    ) -> tuple[list[dict[str, Any]], AsyncIterator[Event]]:
        """The conversation so far, asked of the REPL, and `client`'s subscription from the
        running turn's start, made as the answer arrives: the events before it are in the
        conversation or the running turn, those after it reach the subscription."""
        if self._closed:
            raise AvatarError("the session has ended")
        number = next(self._numbers)
        joined: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._joining[number] = (client, joined)
        self.peer.send({"op": "history", "id": number})
        try:
            history, events = await asyncio.wait_for(joined, JOIN_WITHIN)
        except TimeoutError:
            self._joining.pop(number, None)
            said = f"the REPL running session {self.session_id} does not answer"
            raise AvatarError(said) from None
        return history, events

    def detach(self, client: str) -> None:
        """`client` leaves (the session goes on in the REPL)."""
        self.broadcast.drop(client)

    async def prompt(self, text: str, client: str, rule: str | None = None) -> Event:
        """Send `text` to the REPL, which queues it with its own prompts; its `turn_ended`
        event when it ran (or was dropped). (`rule`: the REPL answers its questions.)"""
        if self._closed:
            return turn_ended(0, client, "the session has ended", 1)
        done: asyncio.Future[Event] = asyncio.get_running_loop().create_future()
        self._prompts.setdefault(client, deque()).append(done)
        self.peer.send({"op": "prompt", "text": text, "client": client})
        return await asyncio.shield(done)

    def answer(self, request_id: str, answer: Answer | Refusal, client: str | None) -> bool:
        """Pass `client`'s answer to the REPL (the first of the attached clients' answers;
        the REPL's own menu may have been answered first: it says which won)."""
        if request_id not in self._asked:
            return False
        self._asked.discard(request_id)
        text = answer if isinstance(answer, str) else answer.reason
        self.peer.send({"op": "answer", "id": request_id, "answer": text, "client": client})
        return True

    async def cancel(self, client: str | None = None) -> None:
        """Ask the REPL to interrupt its running turn (it says that `client` did)."""
        self.peer.send({"op": "cancel", "client": client})

    async def close(self, reason: str | None = None) -> None:
        """End it for the attached clients (`closed` saying `reason`; the REPL's leaving when
        None), and let the REPL go (it carries on alone)."""
        if self._closed:
            return
        self._closed = True
        for waiting in self._prompts.values():
            for done in waiting:
                if not done.done():
                    done.set_result(turn_ended(0, "", "the session has ended", 1))
        self._prompts.clear()
        for _, joined in self._joining.values():
            if not joined.done():
                joined.set_exception(AvatarError("the session has ended"))
        self._joining.clear()
        self.broadcast.end(reason or "the REPL running it left")
        self.peer.writer.close()

    # ----- what the REPL sends ------------------------------------------------------------

    async def run(self) -> None:
        """Take the REPL's frames until it leaves (then the session ends)."""
        try:
            async for frame in self.peer.frames():
                self._take(frame)
        finally:
            await self.close()

    def _take(self, frame: dict[str, Any]) -> None:
        if isinstance(frame.get("info"), dict):
            self._info.update(frame["info"])
        if isinstance(frame.get("event"), dict):
            self._publish(frame["event"])
        if "history" in frame:
            client, joined = self._joining.pop(int(frame.get("id") or 0), ("", None))
            if joined is not None and not joined.done():
                events = self.broadcast.subscribe(client, replay=False, since_turn=True)
                joined.set_result((list(frame["history"] or []), events))

    def _publish(self, event: Event) -> None:
        kind = event.get("type")
        if kind == "turn_started":
            self.broadcast.turn_begins()
            self._in_turn = True
        elif kind == "session":
            self._started = event
        elif kind == "permission_asked":
            self._asked.add(str(event.get("id")))
        elif kind == "permission_answered":
            self._asked.discard(str(event.get("id")))
        self.broadcast.publish(event)
        if kind == "turn_ended" or (kind == "session" and not self._in_turn):
            # A client joining from here shows what came before from the conversation (and
            # the session from `started()`).
            self._in_turn = False
            self.broadcast.turn_begins()
        if kind == "turn_ended":
            waiting = self._prompts.get(str(event.get("client")))
            if waiting:
                waiting.popleft().set_result(event)


async def host(hub: Hub, frame: dict[str, Any], peer: Peer) -> None:
    """Serve one REPL's `host` connection: its session is live in `hub` while it lasts."""
    session = HostedSession(peer, frame)
    forget: Callable[[], None] = hub.adopt(session)
    try:
        await session.run()
    finally:
        forget()
        with contextlib.suppress(ConnectionError):
            await session.close()
