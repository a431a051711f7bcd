"""An engine whose open session is a live session of the running server (`avatar attach`).

It is an `Engine` (the library, the providers, the config are this process's own, as for any
engine), with the open session's methods talking to the server instead of an agent: a turn
is a prompt queued on the live session, its events those the server streams; the events of
other clients' turns reach `subscribe()`d listeners as they happen (their prompt first, as a
user message); a permission question goes to the handler here, and one answered from
another client is withdrawn here. What would change the session itself (another provider,
model or session) is the business of the process that opened it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, NoReturn

from avatar.core.errors import AvatarError, UsageError
from avatar.core.events import (
    BaseEvent,
    FileDiff,
    Notice,
    PermissionRequested,
    SessionStarted,
    TurnFinished,
    UserMessage,
    event_from_dict,
)
from avatar.engine.engine import Engine
from avatar.engine.numbers import Numbers
from avatar.engine.status import EngineStatus
from avatar.server.peer import read_frame
from avatar.server.protocol import decode, encode, socket_path
from avatar.server.shared import answer_of
from avatar.sessions.types import ToolCall, TranscriptMessage

if TYPE_CHECKING:
    from avatar.core.prompts import Prompt
    from avatar.engine.open_session import OpenSession
    from avatar.library.worktrees import Worktree
    from avatar.policy.permissions import Answer, PermissionHandler, Refusal

_END = object()


def _switched(data: dict[str, Any]) -> str:
    """The line a provider switch made elsewhere gets here (its `session` line came before)."""
    who = data.get("client") or "another client"
    then = "; the next prompt hands it the conversation" if data.get("handoff") else ""
    return f"{who} switched this session to {data.get('provider')}{then}"


class NotSent(AvatarError):
    """A prompt the server did not answer (it had stopped, or stopped before the turn
    ended): the client keeps it, to send again."""


def _error(message: str, code: int) -> AvatarError:
    """The error the server said, with its exit code."""
    error = UsageError(message) if code == 2 else AvatarError(message)
    error.exit_code = code
    return error


class RemoteEngine(Engine):
    """See the module docstring; `attach()` connects it to a live session."""

    started: SessionStarted | None = None  #: how the live session was opened
    _writer: asyncio.StreamWriter | None = None
    _others: str | None = None  # the client whose turn runs, when it is another's
    #: Why the live session is no longer reachable from here (None while it is).
    gone: str | None = None
    #: The model and the numbers of the process that runs the session, as it last sent them
    #: (at the attach, then at each turn's end): one source for every client and `ps`.
    _model: str | None = None
    _numbers: Numbers = Numbers()
    _finished: TurnFinished | None = None  # a turn's end, held until its figures come
    _turn_starts: tuple[Callable[[float], None], ...] = ()  # (`on_turn_start`)

    async def attach(self, ref: str, client: str | None = None) -> list[TranscriptMessage]:
        """Attach to the live session `ref` (id or prefix) as `client`; the conversation so
        far. An AvatarError when no server runs or no such session is live. Its events come
        once `listen()` is called."""
        try:
            reader, self._writer = await asyncio.open_unix_connection(str(socket_path()))
        except OSError:
            raise AvatarError("no server is running (avatar serve starts one)") from None
        self._send({"op": "attach", "ref": ref, "client": client})
        first = decode(await read_frame(reader) or b"{}", "a frame")
        if "ok" not in first:
            raise _error(first.get("error", "the server refused"), int(first.get("exit", 1)))
        self.client = client or f"attach:{os.getpid()}"
        if first.get("started"):
            started = event_from_dict(first["started"])
            assert isinstance(started, SessionStarted)
            self.started = started
        self.cwd = self.library.cwd = type(self.cwd)(first["ok"]["project"])
        self._figures(first["ok"])
        self._handler: PermissionHandler | None = None
        self._turn: asyncio.Queue[Any] = asyncio.Queue()
        self._mine = False  # the running turn is this client's
        self._asking: dict[str, asyncio.Future[Any]] = {}
        self._verdicts: dict[str, asyncio.Future[tuple[str, str | None]]] = {}
        self._settled: set[str] = set()  # questions answered here through `settle()`
        self._reader = reader
        self._leaving = False  # this client detaches (`close()`): no news of it
        return [
            TranscriptMessage(
                role=m["role"],
                text=m["text"],
                tool_calls=[ToolCall(c["name"], c.get("id")) for c in m["tool_calls"]],
            )
            for m in first.get("history", [])
        ]

    def listen(self) -> None:
        """Start taking the session's events (after the listeners subscribed): the running
        turn's so far first."""
        self._reading = asyncio.ensure_future(self._read(self._reader))

    def _send(self, frame: dict[str, Any]) -> None:
        if self._writer is None or self._writer.is_closing():
            raise AvatarError("the server has ended")
        self._writer.write(encode(frame))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(OSError, ValueError):
            while line := await read_frame(reader):
                data = decode(line, "a frame").get("event")
                if isinstance(data, dict):
                    self._dispatch(data)
        self._deliver_finished()
        if self.gone is None and not self._leaving:
            self.gone = "the server is gone"
            said = "the connection to the server ended (it stopped or was killed)"
            self._emit(
                Notice(message=f"{said}: this session is no longer live here", level="warning")
            )
        self._end_waiting()

    def _end_waiting(self) -> None:
        """Nothing more comes: the turn waited for ends, and so do answers waiting for the
        server's word."""
        self._turn.put_nowait(_END)
        for verdict in self._verdicts.values():
            if not verdict.done():
                verdict.set_result(("", None))
        self._verdicts.clear()

    def on_turn_start(self, callback: Callable[[float], None]) -> None:
        """Call `callback` when the live session starts a turn (this client's or another's),
        with the moment it started in `time.monotonic()` terms: a screen times the turn from
        it, not from when a prompt was typed (it may wait behind another turn) or from the
        attach (a turn joined midway)."""
        self._turn_starts = (*self._turn_starts, callback)

    def _dispatch(self, data: dict[str, Any]) -> None:
        kind = data["type"]
        if kind == "turn_started":
            self._mine = data["client"] == self.client
            self._others = None if self._mine else str(data["client"])
            at = data.get("at")
            ago = max(0.0, time.time() - at) if isinstance(at, (int, float)) else 0.0
            for callback in self._turn_starts:
                callback(time.monotonic() - ago)
            if not self._mine:
                self._emit(UserMessage(text=f"({data['client']}) {data['prompt']}"))
        elif kind == "turn_ended":
            self._figures(data.get("figures"))
            self._deliver_finished()  # (its end line shows the figures just come)
            if self._mine:
                self._turn.put_nowait(data)
            self._mine, self._others = False, None
        elif kind == "permission_asked":
            self._ask(data)
        elif kind == "permission_answered":
            self._answered(data)
        elif kind == "cancelled":
            if data.get("client") != self.client:
                who = data.get("client") or "the server"
                self._emit(Notice(message=f"{who} interrupted the turn"))
        elif kind == "switched":
            self._emit(Notice(message=_switched(data)))
        elif kind == "closed":
            why = data.get("reason")
            self.gone = why or "the session has ended"
            said = f"{why}: this live session has ended" if why else "this live session has ended"
            self._emit(Notice(message=said, level="warning"))
            self._end_waiting()
        else:
            try:
                event = event_from_dict(data)
            except (KeyError, TypeError):  # one this client does not know (a newer server's)
                return
            if isinstance(event, SessionStarted):
                self.started = event
            if isinstance(event, TurnFinished) and not event.replay:
                self._finished = event  # until its `turn_ended` brings the figures
                return
            self._deliver(event)

    def _deliver(self, event: BaseEvent) -> None:
        if self._mine:
            self._turn.put_nowait(event)
        else:
            self._emit(event)

    def _deliver_finished(self) -> None:
        finished, self._finished = self._finished, None
        if finished is not None:
            self._deliver(finished)

    def _figures(self, data: Any) -> None:
        """The model and numbers another process sent (`figures_of`, or a `ps` row)."""
        if isinstance(data, dict) and isinstance(data.get("numbers"), dict):
            self._numbers = Numbers.from_dict(data["numbers"])
            self._model = data.get("model") if isinstance(data.get("model"), str) else None

    def _ask(self, data: dict[str, Any]) -> None:
        handler = self._handler
        if handler is None:
            return
        diffs = [FileDiff(**d) for d in data.get("diffs") or []]
        request = PermissionRequested(
            id=data["id"], title=data["title"], kind=data["kind"], diffs=diffs
        )
        asking = asyncio.ensure_future(handler(request))
        self._asking[request.id] = asking

        def answered(task: asyncio.Future[Any]) -> None:
            self._asking.pop(request.id, None)
            if task.cancelled() or task.exception() is not None:
                return
            if request.id in self._settled:  # (sent by `settle`)
                self._settled.discard(request.id)
                return
            answer = task.result()
            text = answer if isinstance(answer, str) else getattr(answer, "reason", "deny")
            with contextlib.suppress(AvatarError):
                self._send({"op": "answer", "id": request.id, "answer": text})

        asking.add_done_callback(answered)

    def _answered(self, data: dict[str, Any]) -> None:
        """A question was answered (here or elsewhere): the answer waiting for the server's
        word gets it; a menu still open here is withdrawn, saying who answered."""
        request_id, who = str(data["id"]), data.get("client")
        verdict = self._verdicts.pop(request_id, None)
        if verdict is not None and not verdict.done():
            verdict.set_result((str(data["answer"]), who))
            return
        asking = self._asking.pop(request_id, None)
        if asking is not None and who != self.client:
            asking.cancel()
            self._emit(Notice(message=f"{who or 'the server'} answered {data['answer']}"))

    async def settle(
        self, request_id: str, answer: Answer | Refusal
    ) -> tuple[Answer | Refusal, str | None]:
        """Send this client's `answer` to the question `request_id` and wait for the server's
        word: the answer that applies (the first the session took: exactly one does) and,
        when it is another client's, who gave it (None: this one's). Every client shows the
        same answer so."""
        text = answer if isinstance(answer, str) else answer.reason
        verdict: asyncio.Future[tuple[str, str | None]]
        verdict = asyncio.get_running_loop().create_future()
        self._verdicts[request_id] = verdict
        self._settled.add(request_id)
        try:
            self._send({"op": "answer", "id": request_id, "answer": text})
        except AvatarError:
            self._verdicts.pop(request_id, None)
            return answer, None
        said, who = await verdict
        if not said or who == self.client:
            return answer, None
        return answer_of(said), who or "the server"

    # ----- the open session, on the server ------------------------------------------------

    @property
    def agent(self) -> NoReturn:
        """Refused: the live session's agent is the server's; opening another session (new,
        resume, continue, fork) is the business of the process that opened it."""
        self._elsewhere("opening another session")

    def set_permission_handler(self, handler: PermissionHandler | None) -> None:
        """Who answers the live session's permission questions here."""
        self._handler = handler

    def chosen_provider(self) -> str:
        """The live session's provider."""
        return self.started.provider if self.started else super().chosen_provider()

    def status(self) -> EngineStatus:
        """Provider, model, session and numbers, as the process that runs the session has
        them (sent at the attach and at each turn's end)."""
        started = self.started
        return EngineStatus(
            provider=started.provider if started else None,
            model=self._model or (started.model if started else None),
            session_id=started.session_id if started else None,
            how=started.how if started else None,
            numbers=self._numbers,
        )

    async def send(self, prompt: str | Prompt) -> AsyncIterator[BaseEvent]:
        """Queue `prompt` on the live session and yield its turn's events when it runs
        (images stay with the process that opened it: the socket carries text)."""
        if not isinstance(prompt, str):
            if prompt.images:
                raise UsageError("images go to a live session from the process that opened it")
            prompt = prompt.text
        try:
            self._send({"op": "prompt", "text": prompt})
        except AvatarError:
            raise NotSent(f"{self.gone or 'the server is gone'}: the prompt was not sent") from None
        while True:
            item = await self._turn.get()
            if item is _END:
                raise NotSent(f"{self.gone or 'the server is gone'} before the turn ended")
            if isinstance(item, dict):  # its `turn_ended`
                if item.get("error"):
                    raise _error(item["error"], int(item.get("exit", 1)))
                return
            yield item

    async def steer(self, text: str) -> bool:
        """False: text typed during a turn waits for the next one."""
        return False

    @property
    def turn_elsewhere(self) -> bool:
        """True while another client's turn runs on the live session (Ctrl-C here
        interrupts it)."""
        return self._others is not None

    @property
    def turn_client(self) -> str | None:
        """The client whose turn runs, when it is another's (the status line says so)."""
        return self._others

    async def cancel(self) -> None:
        """Interrupt the live session's running turn."""
        with contextlib.suppress(AvatarError):
            self._send({"op": "cancel"})

    async def close(self) -> None:
        """Detach (the session lives on for its other clients)."""
        self._leaving = True
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(ConnectionError):
                await self._writer.wait_closed()
            self._writer = None
        reading = getattr(self, "_reading", None)
        if reading is not None:
            reading.cancel()

    def _elsewhere(self, what: str) -> NoReturn:
        raise AvatarError(f"{what} is for the process that opened this session, not attach")

    async def open(self, *args: Any, **kwargs: Any) -> OpenSession:
        """Refused: an attached engine is on the live session it attached to."""
        self._elsewhere("opening another session")

    async def switch_provider(self, name: str, **how: Any) -> OpenSession:
        """Refused (see the module docstring)."""
        self._elsewhere("switching provider")

    async def set_model(self, model: str) -> None:
        """Refused (see the module docstring)."""
        self._elsewhere("changing the model")

    async def compact(self) -> str:
        """Refused (see the module docstring)."""
        self._elsewhere("/compact")

    async def enter_worktree(self, name: str | None = None) -> Worktree:
        """Refused (see the module docstring)."""
        self._elsewhere("a worktree")
