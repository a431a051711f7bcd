"""One live session of the server (docs/design.md §11), shared by the clients subscribed to it.

Every subscribed client sees every event of it (a late one first gets a replay of what happened
so far); prompts from any client queue in order and run one at a time; a permission question
goes to every client that can answer one, and the first answer wins.

Events are JSON-ready dicts: those of `chat --json` (`BaseEvent.to_dict`), plus the hub's own,
whose `type` says what happened to the live session rather than in the agent:

- `turn_started` {turn, client, prompt, at}: a queued prompt starts running (`at`: when, the
  wall clock, by which every client times the turn);
- `turn_ended` {turn, client, error, exit}: it ended (`error`: the one line an `AvatarError`
  said, else None; `exit`: the exit code `chat` would give it);
- `permission_asked` {id, title, kind, diffs}: a question waits for an answer (`answer()`);
- `permission_answered` {id, answer, client}: it was answered (or given up: `client` None);
- `switched` {provider, session_id, model, handoff, client}: `client` switched it to another
  provider (`switch()`); `handoff`: what the next prompt opens with (None: nothing). The new
  session's `session` event and the handoff's one-line `notice` came before it;
- `cancelled` {client}: `client` interrupted the running turn (None: the server, as a question
  nobody could answer was given up);
- `closed` {reason}: the live session ended (`reason`: why, in a few words, when it was not
  its last client leaving); the subscription ends after it.

Supervised: a turn that fails in any way ends with its `turn_ended` and the error in one line
(an unexpected exception as `internal error: …`, its traceback in the server's log), and the
session takes the next prompt; should the worker that runs the turns itself fail, the session
closes saying why, and every prompt waiting ends with that error. No client waits for ever.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
import time
import traceback
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from avatar.core.errors import AvatarError
from avatar.core.events import Notice
from avatar.policy.permissions import unanswered
from avatar.server.broadcast import Broadcast
from avatar.server.shared import (
    Event,
    LiveInfo,
    State,
    conversation_of,
    error_line,
    figures_of,
    said_of,
    turn_ended,
    turn_exit,
    turn_started,
)

if TYPE_CHECKING:
    from avatar.core.events import BaseEvent, PermissionRequested
    from avatar.core.prompts import Prompt
    from avatar.engine.engine import Engine
    from avatar.policy.permissions import Answer, Refusal

__all__ = ["REFILL_AFTER", "Event", "LiveInfo", "LiveSession", "State"]

#: Seconds after a session's first turn ends when the next warm agent starts
#: (`after_first_turn`): starting one holds the loop a few ms (its walls), and the turn's
#: clients are told it ended first.
REFILL_AFTER = 0.2


@dataclass
class _Turn:
    number: int
    text: str | Prompt
    client: str
    #: How a client that cannot answer (`chat`) answers its own turn's questions: its
    #: `--permission` ("allow", "deny", or "ask": denied, saying so). None: its clients ask.
    rule: str | None = None
    done: asyncio.Future[Event] = field(default_factory=asyncio.Future)


class LiveSession:
    """One open session of one engine, shared by its subscribed clients; see the module
    docstring. Made by `Hub.open()`."""

    def __init__(
        self, engine: Engine, on_closed: Callable[[LiveSession, str | None], None]
    ) -> None:
        self.engine = engine
        self.opener = ""  #: the client whose `Hub.open` opened it (others joined it)
        self.since = time.time()
        self.broadcast = Broadcast()
        self._answering: set[str] = set()  # clients that answer permission questions
        self._turns: asyncio.Queue[_Turn] = asyncio.Queue()
        self._numbers = itertools.count(1)
        self._asked: dict[str, asyncio.Future[Answer | Refusal]] = {}
        self._running: _Turn | None = None
        self._closed = False
        self._on_closed = on_closed
        self._after_first: Callable[[], None] | None = None  # (`after_first_turn`)
        self._worker = asyncio.ensure_future(self._work())
        self._worker.add_done_callback(self._worker_ended)
        engine.subscribe(self._on_engine_event)
        engine.set_permission_handler(None)  # nobody can answer until such a client comes

    # ----- what it is -------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        """The session's id (as its provider knows it; it changes on a provider switch)."""
        status = self.engine.status()
        return status.session_id or ""

    @property
    def state(self) -> State:
        """idle, in a turn, or waiting on a permission question."""
        if self._asked:
            return "permission"
        return "turn" if self._running is not None else "idle"

    @property
    def clients(self) -> list[str]:
        """The clients subscribed now, in the order they came."""
        return self.broadcast.clients

    @property
    def history(self) -> list[Event]:
        """Every event so far."""
        return self.broadcast.history

    @property
    def running_prompt(self) -> str | None:
        """The running turn's prompt as the user typed it; None between turns."""
        turn = self._running
        if turn is None:
            return None
        return turn.text if isinstance(turn.text, str) else turn.text.text

    @property
    def running_client(self) -> str | None:
        """The client whose prompt is the running turn; None between turns."""
        return self._running.client if self._running is not None else None

    @property
    def busy(self) -> bool:
        """True while a turn runs or prompts wait."""
        return self._running is not None or not self._turns.empty()

    @property
    def closed(self) -> bool:
        """True once the session was closed (`Hub.close` or its last client left)."""
        return self._closed

    def info(self) -> LiveInfo:
        """What `avatar ps` shows of it."""
        status = self.engine.status()
        numbers = status.numbers
        return LiveInfo(
            provider=status.provider or "",
            session_id=status.session_id or "",
            project=str(self.engine.cwd),
            state=self.state,
            model=status.model,
            tokens=numbers.turn_tokens,
            numbers=numbers.to_dict(),
            since=self.since,
            clients=self.clients,
            queued=self._turns.qsize(),
        )

    # ----- clients ----------------------------------------------------------------------

    def subscribe(
        self, client: str, *, replay: bool = True, answers: bool = False, since_turn: bool = False
    ) -> AsyncIterator[Event]:
        """Events of this session for `client`: first what happened so far (unless `replay`
        is False: then only from now on; `since_turn`: from the running turn's start, for a
        client that shows the finished turns from the session's history), then every event
        as it comes, until the client detaches or the session closes (the last event is then
        `closed`). `answers`: the client can answer permission questions (a terminal or a
        page; `chat` cannot, and a session with no such client denies them as `chat` does).
        A client name subscribes once; subscribing again replaces its earlier subscription."""
        events = self.broadcast.subscribe(
            client, replay=replay, since_turn=since_turn, waiting=set(self._asked)
        )
        if answers:
            self._answering.add(client)
            self.engine.set_permission_handler(self._ask)
        return events

    def started(self) -> dict[str, Any] | None:
        """How the session was opened (its `session` event); None before it opened."""
        current = self.engine.current
        return current.started.to_dict() if current is not None else None

    async def join(
        self, client: str, *, answers: bool = True
    ) -> tuple[list[dict[str, Any]], AsyncIterator[Event]]:
        """The conversation so far without the running turn, and `client`'s subscription
        from that turn's start (`Shared.join`)."""
        current = self.engine.current
        said = conversation_of(current.history() if current else None, self.running_prompt)
        return said, self.subscribe(client, replay=False, since_turn=True, answers=answers)

    def detach(self, client: str) -> None:
        """`client` leaves: its subscription ends; a session left without clients and
        without work closes (its agent stops). Questions only it could answer are denied."""
        self.broadcast.drop(client)
        self._answering.discard(client)
        if not self._answering:
            self.engine.set_permission_handler(None)
            for request_id in list(self._asked):
                self.answer(request_id, "deny", None)
        if not self.clients and not self.busy and not self._closed:
            self._on_closed(self, None)

    # ----- turns ------------------------------------------------------------------------

    async def prompt(self, text: str | Prompt, client: str, rule: str | None = None) -> Event:
        """Queue `text` (or a `Prompt` with images) as a turn (prompts of every client run in
        the order they came) and wait for it: returns its `turn_ended` event. Its events
        reach every subscriber between its `turn_started` and `turn_ended`. `rule`: the
        client cannot answer a permission question (`chat`): its turn's questions are
        answered by its own `--permission` rule, as without a server, never left waiting for
        a client that may not be looking."""
        turn = _Turn(next(self._numbers), text, client, rule)
        await self._turns.put(turn)
        return await asyncio.shield(turn.done)

    def answer(self, request_id: str, answer: Answer | Refusal, client: str | None) -> bool:
        """Answer the permission question `request_id` ("allow", "always", "deny" or a
        `Refusal` with the user's words); the first answer wins: False when it was already
        answered (or never asked)."""
        waiting = self._asked.get(request_id)
        if waiting is None or waiting.done():
            return False
        waiting.set_result(answer)
        self._publish(
            {
                "type": "permission_answered",
                "id": request_id,
                "answer": said_of(answer),
                "client": client,
            }
        )
        return True

    async def cancel(self, client: str | None = None) -> None:
        """Interrupt the running turn (it ends with stop reason `cancelled`), saying that
        `client` did (`cancelled`); a question waiting is denied."""
        if self._running is None:
            return
        self._publish({"type": "cancelled", "client": client})
        for request_id in list(self._asked):
            self.answer(request_id, "deny", client)
        await self.engine.cancel()

    async def switch(
        self, provider: str, model: str | None = None, client: str | None = None
    ) -> None:
        """Switch the session to `provider` (with a handoff, `Engine.switch_provider`);
        waits for the running turn and prompts queued before it. Every client is told that
        `client` switched it (`switched`), unless it was on `provider` already."""
        await self._idle()
        before = self.engine.current
        if model is None:
            opened = await self.engine.switch_provider(provider)
        else:
            opened = await self.engine.switch_provider(provider, model=model)
        if opened is before:  # (already there: a notice said so)
            return
        status = self.engine.status()
        self._publish(
            {
                "type": "switched",
                "provider": opened.provider,
                "session_id": opened.session_id,
                "model": status.model,
                "handoff": status.handoff,
                "client": client,
            }
        )

    async def close(self, reason: str | None = None) -> None:
        """End the live session: drop queued prompts (each ends with `reason`), stop its
        agent, end subscriptions (`closed` says `reason`)."""
        if self._closed:
            return
        self._closed = True
        why = reason or "the session was closed"
        self._worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._worker
        running, self._running = self._running, None
        if running is not None and not running.done.done():
            running.done.set_result(self._ended(running, why, 1))
        while not self._turns.empty():
            turn = self._turns.get_nowait()
            turn.done.set_result(self._ended(turn, why, 1))
        with contextlib.suppress(Exception):  # (an agent that will not stop is not theirs)
            await self.engine.close()
        self.broadcast.end(reason)

    def _worker_ended(self, worker: asyncio.Future[None]) -> None:
        """The worker ended: by `close()`, or by failing itself (then the session closes,
        saying why: no prompt waits for a worker that is gone)."""
        if worker.cancelled() or self._closed:
            return
        error = worker.exception()
        said = f"internal error: {error_line(error)}" if error is not None else "its worker ended"
        _log(f"live session {self.session_id} closed: {said}", error)
        self._on_closed(self, f"the server closed it: {said}")

    async def _idle(self) -> None:
        while self.busy:
            await asyncio.sleep(0.02)

    async def _work(self) -> None:
        while True:
            turn = await self._turns.get()
            self._running = turn
            try:
                ended = await self._run(turn)
            finally:
                self._running = None
                self.broadcast.turn_begins()
            if not turn.done.done():
                turn.done.set_result(ended)
            asyncio.get_running_loop().call_later(REFILL_AFTER, self._first_turn_over)
            if not self.clients and not self.busy:
                self._on_closed(self, None)

    async def _run(self, turn: _Turn) -> Event:
        self.broadcast.turn_begins()
        prompt = turn.text if isinstance(turn.text, str) else turn.text.recorded
        self._publish(turn_started(turn.number, turn.client, prompt))
        stop, failed = "end_turn", False
        try:
            async for event in self.engine.send(turn.text):
                data = self._event(event)
                if data.get("type") == "turn_finished":
                    stop = data.get("stop_reason", stop)
                failed = failed or data.get("type") == "error"
        except AvatarError as e:
            return self._ended(turn, str(e), e.exit_code)
        except OSError as e:  # a full or read-only disk: as `chat` says it
            return self._ended(turn, f"cannot write {e.filename or 'a file'}: {e.strerror}", 1)
        except Exception as e:  # a bug: this turn fails, saying so; the session goes on
            _log(f"live session {self.session_id}: turn {turn.number} failed", e)
            return self._ended(turn, f"internal error: {error_line(e)}", 1)
        return self._ended(turn, None, turn_exit(stop, failed))

    def _ended(self, turn: _Turn, error: str | None, code: int) -> Event:
        event = turn_ended(turn.number, turn.client, error, code, figures_of(self.engine.status()))
        self._publish(event)
        return event

    def after_first_turn(self, callback: Callable[[], None], within: float) -> None:
        """Call `callback` once: when the first turn ends, or `within` seconds from now,
        whichever comes first. The server starts the next warm agent so: not beside a short
        turn (on two cores, an agent booting beside a one-shot's ~0.2 s turn slows it by a
        third), but beside a real model's turn of seconds, which mostly waits on the model,
        so that the one-shot a script sends right after it finds that agent started."""
        self._after_first = callback
        asyncio.get_running_loop().call_later(within, self._first_turn_over)

    def _first_turn_over(self) -> None:
        callback, self._after_first = self._after_first, None
        if callback is not None:
            callback()

    # ----- events and questions ---------------------------------------------------------

    def started_with(self, events: list[BaseEvent]) -> None:
        """Publish what starting its agent said before the session went live (a warm
        agent's notices), as if said now."""
        for event in events:
            self._event(event)

    def _on_engine_event(self, event: BaseEvent) -> None:
        self._event(event)

    def _event(self, event: BaseEvent) -> Event:
        data = event.to_dict()
        self._publish(data)
        return data

    def _publish(self, data: Event) -> None:
        self.broadcast.publish(data)

    async def _ask(self, request: PermissionRequested) -> Answer | Refusal:
        turn = self._running
        if turn is not None and turn.rule is not None:
            return self._by_rule(request, turn)
        waiting: asyncio.Future[Answer | Refusal] = asyncio.get_running_loop().create_future()
        self._asked[request.id] = waiting
        self._publish(
            {
                "type": "permission_asked",
                "id": request.id,
                "title": request.title,
                "kind": request.kind,
                "diffs": [asdict(d) for d in request.diffs],
            }
        )
        try:
            return await waiting
        finally:
            self._asked.pop(request.id, None)

    def _by_rule(self, request: PermissionRequested, turn: _Turn) -> Answer:
        """The answer of `turn`'s own rule, said to every client as its client's answer."""
        answer: Answer = "allow" if turn.rule == "allow" else "deny"
        if turn.rule == "ask":  # (as the engine's gate says it where nobody can answer)
            self._event(Notice(message=unanswered(request.title), level="warning"))
        said = {"id": request.id, "answer": answer, "client": turn.client}
        self._publish({"type": "permission_answered", **said})
        return answer


def _log(what: str, error: BaseException | None) -> None:
    """Say in the server's log (its stderr) what failed, with the traceback."""
    sys.stderr.write(f"avatar server: {what}\n")
    if error is not None:
        traceback.print_exception(error, file=sys.stderr)
    sys.stderr.flush()
