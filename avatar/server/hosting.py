"""A REPL's side of a hosted session (`avatar.server.hosted`): its open session, listed with
the running server (`avatar ps`, `avatar attach`) while its engine stays in the REPL.

Registering never makes the REPL wait: the connect is one non-blocking `connect(2)` (no
socket file, nobody listening or a full backlog fail at once, and the REPL goes on as without
a server), and frames are written without waiting for the server to read them (a server that
leaves too much unread is given up). Only the user's own server is told anything: a socket
another user's process listens on (its peer credentials) is left at once. It registers once a
session is open, and again (silently) at a later session or turn after a server started
meanwhile; `AVATAR_NO_SERVER=1` turns it off. A server that stops leaves the REPL as it was,
with one line saying so.

What the REPL tells it: every event it shows (`event()`), the turns it runs (`turn_started`,
`turn_ended`, `dropped`), that its queue changed (`changed()`); its permission handler,
wrapped (`asking()`), races the REPL's menu against the attached clients' answers. What it
tells the REPL: the prompts of attached clients (`take`), a cancel (`interrupt`), one line to
show (`tell`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from avatar.core.events import SessionStarted
from avatar.server.peer import peer_creds
from avatar.server.protocol import decode, encode, socket_path
from avatar.server.shared import (
    Event,
    State,
    answer_of,
    conversation_of,
    figures_of,
    said_of,
    turn_ended,
    turn_exit,
    turn_started,
)

if TYPE_CHECKING:
    from avatar.core.errors import AvatarError
    from avatar.core.events import BaseEvent, PermissionRequested
    from avatar.engine.engine import Engine
    from avatar.policy.permissions import Answer, PermissionHandler, Refusal

#: Events too frequent to recompute the figures `avatar ps` shows after each.
_STREAMED = frozenset({"text", "thinking"})
#: Bytes written and not yet read by the server past which it is given up (it hangs).
_BACKLOG = 4 << 20


class Hosting:
    """One REPL's registration with the server; see the module docstring. `hosting()` makes
    one (None with `AVATAR_NO_SERVER`)."""

    def __init__(
        self,
        engine: Engine,
        *,
        take: Callable[[str, str], None],
        interrupt: Callable[[], Awaitable[None]],
        tell: Callable[[str], None],
        queued: Callable[[], int],
        path: str | None = None,
    ) -> None:
        self.engine = engine
        self.client = f"repl:{os.getpid()}"  #: the REPL's name among the session's clients
        self.since = time.time()
        self._take, self._interrupt, self._tell, self._queued = take, interrupt, tell, queued
        self._path = path or socket_path()
        self._writer: asyncio.StreamWriter | None = None
        self._outbox: list[bytes] | None = None  # frames written before the connection is up
        self._reading: asyncio.Task[None] | None = None
        self._running: Event | None = None  # the running turn's `turn_started`
        self._turns = 0
        self._stop, self._failed = "end_turn", False  # how the running turn is ending
        self._dropped: list[tuple[str, str]] = []  # other clients' prompts, not to run
        self._asked: dict[str, asyncio.Future[tuple[str, Answer | Refusal]]] = {}
        self._info: dict[str, Any] | None = None  # the figures last sent
        self._told = False  # the server's stop was said (once)
        self._closing = False
        self._tasks: set[asyncio.Future[Any]] = set()

    @property
    def registered(self) -> bool:
        """True while the session is listed (or being listed) with a server."""
        return self._writer is not None or self._outbox is not None

    # ----- the connection -----------------------------------------------------------------

    def register(self) -> None:
        """List the open session with the server, when one runs and it is not listed yet;
        never waits (see the module docstring)."""
        current = self.engine.current
        started = current.started if current is not None else None
        if self.registered or self._closing or started is None:
            return
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(self._path)
            if peer_creds(sock)[1] != os.getuid():  # not the user's own server: told nothing
                raise ConnectionRefusedError
        except OSError:  # no server (or none that can take one more client now)
            sock.close()
            return
        self._outbox = []
        self._send(
            {
                "op": "host",
                "client": self.client,
                "since": self.since,
                "info": self._figures(),
                "started": started.to_dict(),
                "running": self._running,
            }
        )
        self._reading = asyncio.ensure_future(self._serve(sock))

    async def _serve(self, sock: socket.socket) -> None:
        try:
            reader, writer = await asyncio.open_unix_connection(sock=sock)
        except OSError:
            self._gone()
            return
        for data in self._outbox or ():
            writer.write(data)
        self._outbox, self._writer = None, writer
        try:
            while line := await reader.readline():
                self._on_frame(decode(line))
        except (OSError, ValueError):
            pass
        self._gone()

    def _gone(self) -> None:
        """The server closed the connection (it stopped, or refused the request)."""
        listed = self._writer is not None
        if self._writer is not None:
            self._writer.close()
        self._writer, self._outbox = None, None
        if listed and not self._closing and not self._told:
            self._told = True
            self._tell("the server stopped: this session is no longer listed (avatar ps)")

    def _send(self, frame: dict[str, Any]) -> None:
        data = encode(frame)
        writer = self._writer
        if writer is not None and not writer.is_closing():
            writer.write(data)
            if writer.transport.get_write_buffer_size() > _BACKLOG:  # a server not reading
                writer.transport.abort()
        elif self._outbox is not None:
            self._outbox.append(data)

    def _on_frame(self, frame: dict[str, Any]) -> None:
        op = frame.get("op")
        if op == "prompt":
            self._take(str(frame.get("text", "")), str(frame.get("client") or "?"))
        elif op == "answer":
            asked = self._asked.get(str(frame.get("id")))
            if asked is not None and not asked.done():
                answer = answer_of(str(frame.get("answer")))
                asked.set_result((str(frame.get("client") or "?"), answer))
        elif op == "cancel":
            who = str(frame.get("client") or "another client")
            if self._running is not None:
                self.cancelled(who)
                self._tell(f"{who} interrupted the turn")
            self._keep(asyncio.ensure_future(self._interrupt()))
        elif op == "history":
            prompt = self._running["prompt"] if self._running is not None else None
            current = self.engine.current
            said = conversation_of(current.history() if current else None, prompt)
            self._send({"history": said, "id": frame.get("id")})

    def _keep(self, task: asyncio.Future[Any]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """The REPL leaves: the session is no longer listed."""
        self._closing = True
        writer, self._writer, self._outbox = self._writer, None, None
        if writer is not None and writer.transport.get_write_buffer_size():
            writer.transport.abort()  # (a server not reading: leaving does not wait for it)
        elif writer is not None:
            writer.close()
        if self._reading is not None:
            self._reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reading

    # ----- what the REPL tells ------------------------------------------------------------

    def event(self, event: BaseEvent) -> None:
        """An event the REPL shows: to the attached clients (a new session is registered
        first, or its id follows in the figures `avatar ps` shows)."""
        if event.replay:  # (a resumed session's history: the conversation carries it)
            return
        if isinstance(event, SessionStarted) and not self.registered:
            self.register()  # (the session goes with the registration)
            return
        data = event.to_dict()
        kind = data.get("type")
        if kind == "turn_finished":
            self._stop = str(data.get("stop_reason") or self._stop)
        self._failed = self._failed or kind == "error"
        self._send({"event": data})
        if kind not in _STREAMED:
            self.changed()

    def changed(self) -> None:
        """Something `avatar ps` shows may have changed (the queue, the model, the numbers):
        sent when it did."""
        if not self.registered:
            return
        figures = self._figures()
        if figures != self._info:
            self._info = figures
            self._send({"info": figures})

    def turn_started(self, prompt: str, client: str | None = None) -> None:
        """A turn starts: the REPL's own prompt, or `client`'s (an attached client's)."""
        self._turns += 1
        self._stop, self._failed = "end_turn", False
        self._running = turn_started(self._turns, client or self.client, prompt)
        if self.registered:
            self._send({"event": self._running})
        else:
            self.register()  # (a server started since; or the session opens in this turn)
        self.changed()

    def turn_ended(self, error: AvatarError | None = None) -> None:
        """The running turn ended (`error`: what the REPL said of it, if it failed)."""
        running, self._running = self._running, None
        if running is not None:
            code = turn_exit(self._stop, self._failed)
            said = str(error) if error is not None else None
            self._ended(running, said, error.exit_code if error is not None else code)
        for prompt, client in self._dropped:
            self._turns += 1
            dropped = {"turn": self._turns, "client": client, "prompt": prompt}
            self._send({"event": {"type": "turn_started", **dropped}})
            self._ended(dropped, "dropped: the turn before it was interrupted", 130)
        self._dropped.clear()
        self.changed()

    def _ended(self, turn: Event, error: str | None, code: int) -> None:
        figures = figures_of(self.engine.status())
        self._send({"event": turn_ended(turn["turn"], turn["client"], error, code, figures)})

    def cancelled(self, client: str | None = None) -> None:
        """The running turn is being interrupted, by `client` (None: the REPL's own user):
        the attached clients are told who."""
        if self._running is not None:
            self._send({"event": {"type": "cancelled", "client": client or self.client}})

    def dropped(self, prompt: str, client: str) -> None:
        """`client`'s queued prompt was dropped (the REPL's turn was interrupted): it ends
        without running, after the running turn."""
        self._dropped.append((prompt, client))
        if self._running is None:
            self.turn_ended()

    # ----- permission questions -----------------------------------------------------------

    def asking(self, handler: PermissionHandler) -> PermissionHandler:
        """`handler` (the REPL's menu) as the engine's permission handler: while the
        session is listed, the question goes to the attached clients too, the first answer
        wins, and the other side's menu is withdrawn saying who answered."""

        async def ask(request: PermissionRequested) -> Answer | Refusal | bool:
            if not self.registered:
                return await handler(request)
            here = asyncio.ensure_future(handler(request))
            there: asyncio.Future[tuple[str, Answer | Refusal]]
            there = asyncio.get_running_loop().create_future()
            self._asked[request.id] = there
            asked = {
                "id": request.id,
                "title": request.title,
                "kind": request.kind,
                "diffs": [asdict(d) for d in request.diffs],
            }
            self._send({"event": {"type": "permission_asked", **asked}})
            self.changed()
            either: list[asyncio.Future[Any]] = [here, there]
            try:
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                here.cancel()
                raise
            finally:
                self._asked.pop(request.id, None)
            answer: Answer | Refusal | bool
            if here.done():
                who, answer = self.client, here.result()
            else:
                here.cancel()  # (the REPL's menu: withdrawn)
                who, answer = there.result()
                self._tell(f"{who} answered {said_of(answer)}")
            said = {"id": request.id, "answer": said_of(answer), "client": who}
            self._send({"event": {"type": "permission_answered", **said}})
            self.changed()
            return answer

        return ask

    # ----- the figures `avatar ps` shows --------------------------------------------------

    def _figures(self) -> dict[str, Any]:
        status = self.engine.status()
        state: State = "permission" if self._asked else "turn" if self._running else "idle"
        return {
            "provider": status.provider or "",
            "session_id": status.session_id or "",
            "project": str(self.engine.cwd),
            "state": state,
            "model": status.model,
            "tokens": status.numbers.turn_tokens,
            "numbers": status.numbers.to_dict(),
            "queued": self._queued(),
        }


def hosting(
    engine: Engine,
    *,
    take: Callable[[str, str], None],
    interrupt: Callable[[], Awaitable[None]],
    tell: Callable[[str], None],
    queued: Callable[[], int],
) -> Hosting | None:
    """A REPL's `Hosting`, or None when `AVATAR_NO_SERVER` says not to use a server."""
    if os.environ.get("AVATAR_NO_SERVER"):
        return None
    return Hosting(engine, take=take, interrupt=interrupt, tell=tell, queued=queued)
