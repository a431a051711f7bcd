"""The hub: live sessions shared by many clients (DESIGN §11), in-process.

The socket server (`avatar.server.socket`) and the web page both drive sessions through this
API only; the `Engine` is the only thing the hub calls. One engine per live session. Every
client subscribed to a session sees every event of it (a late one first gets a replay of what
happened so far); prompts from any client queue in order and run one at a time; a permission
question goes to every client that can answer one, and the first answer wins.

Events are JSON-ready dicts: those of `chat --json` (`BaseEvent.to_dict`), plus the hub's own,
whose `type` says what happened to the live session rather than in the agent:

- `turn_started` {turn, client, prompt}: a queued prompt starts running;
- `turn_ended` {turn, client, error, exit}: it ended (`error`: the one line an `AvatarError`
  said, else None; `exit`: the exit code `chat` would give it);
- `permission_asked` {id, title, kind}: a question waits for an answer (`answer()`);
- `permission_answered` {id, answer, client}: it was answered (or given up: `client` None);
- `closed` {}: the live session ended; the subscription ends after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from avatar.core.errors import AvatarError, UsageError
from avatar.server.warm import WarmAgents

if TYPE_CHECKING:
    from avatar.core.events import BaseEvent, PermissionRequested
    from avatar.engine.engine import Engine
    from avatar.library.library import Library
    from avatar.library.worktrees import Worktree
    from avatar.policy.permissions import Answer, Refusal

State = Literal["idle", "turn", "permission"]
Event = dict[str, Any]


@dataclass(frozen=True)
class OpenOptions:
    """What a client asks an engine to be built with: the global options and the command's
    own (the same as `avatar`'s flags, DESIGN §3)."""

    cwd: Path
    provider: str | None = None
    model: str | None = None
    preset: str | None = None
    config: Path | None = None
    trust: bool = False
    permission: str | None = None
    add_dirs: tuple[Path, ...] = ()


def build_engine(options: OpenOptions) -> Engine:
    """The engine `avatar` would build for these options (`Engine.from_config`)."""
    from avatar.engine.engine import Engine

    return Engine.from_config(
        options.cwd,
        provider=options.provider,
        model=options.model,
        preset=options.preset,
        config_file=options.config,
        permission=options.permission,
        add_dirs=options.add_dirs,
        trust=options.trust,
    )


@dataclass
class LiveInfo:
    """One live session as `avatar ps` shows it."""

    provider: str
    session_id: str
    project: str
    state: State
    model: str | None
    tokens: int | None
    since: float  #: when it went live (epoch seconds)
    clients: list[str]
    queued: int = 0  #: prompts waiting for the running turn

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (`ps --json`)."""
        return dict(self.__dict__)


@dataclass
class _Turn:
    number: int
    text: str
    client: str
    done: asyncio.Future[Event] = field(default_factory=asyncio.Future)


class LiveSession:
    """One open session of one engine, shared by its subscribed clients; see the module
    docstring. Made by `Hub.open()`."""

    def __init__(self, engine: Engine, on_closed: Callable[[LiveSession], None]) -> None:
        self.engine = engine
        self.opener = ""  #: the client whose `Hub.open` opened it (others joined it)
        self.since = time.time()
        self.history: list[Event] = []  # every event so far, for late subscribers
        self._queues: dict[str, asyncio.Queue[Event | None]] = {}
        self._answering: set[str] = set()  # clients that answer permission questions
        self._turns: asyncio.Queue[_Turn] = asyncio.Queue()
        self._numbers = itertools.count(1)
        self._asked: dict[str, asyncio.Future[Answer | Refusal]] = {}
        self._running: _Turn | None = None
        self._turn_began = 0  # where the running turn's events start in `history`
        self._closed = False
        self._on_closed = on_closed
        self._worker = asyncio.ensure_future(self._work())
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
        return list(self._queues)

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
        old = self._queues.pop(client, None)
        if old is not None:
            old.put_nowait(None)
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        if replay or since_turn:
            for event in self.history[self._turn_began if since_turn else 0 :]:
                queue.put_nowait(event)
        self._queues[client] = queue
        if answers:
            self._answering.add(client)
            self.engine.set_permission_handler(self._ask)
        if not replay and not since_turn:  # a question waiting is news to it all the same
            for event in self.history:
                if event.get("type") == "permission_asked" and event["id"] in self._asked:
                    queue.put_nowait(event)
        return self._drain(queue)

    async def _drain(self, queue: asyncio.Queue[Event | None]) -> AsyncIterator[Event]:
        while True:
            event = await queue.get()
            if event is None:
                return
            yield event
            if event.get("type") == "closed":
                return

    def detach(self, client: str) -> None:
        """`client` leaves: its subscription ends; a session left without clients and
        without work closes (its agent stops). Questions only it could answer are denied."""
        queue = self._queues.pop(client, None)
        if queue is not None:
            queue.put_nowait(None)
        self._answering.discard(client)
        if not self._answering:
            self.engine.set_permission_handler(None)
            for request_id in list(self._asked):
                self.answer(request_id, "deny", None)
        if not self._queues and not self.busy and not self._closed:
            self._on_closed(self)

    # ----- turns ------------------------------------------------------------------------

    async def prompt(self, text: str, client: str) -> Event:
        """Queue `text` as a turn (prompts of every client run in the order they came) and
        wait for it: returns its `turn_ended` event. Its events reach every subscriber
        between its `turn_started` and `turn_ended`."""
        turn = _Turn(next(self._numbers), text, client)
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
        said = answer if isinstance(answer, str) else f"no: {answer.reason}"
        self._publish(
            {"type": "permission_answered", "id": request_id, "answer": said, "client": client}
        )
        return True

    async def cancel(self) -> None:
        """Interrupt the running turn (it ends with stop reason `cancelled`); a question
        waiting is denied."""
        for request_id in list(self._asked):
            self.answer(request_id, "deny", None)
        await self.engine.cancel()

    async def switch(self, provider: str, model: str | None = None) -> None:
        """Switch the session to `provider` (with a handoff, `Engine.switch_provider`);
        waits for the running turn and prompts queued before it."""
        await self._idle()
        if model is None:
            await self.engine.switch_provider(provider)
        else:
            await self.engine.switch_provider(provider, model=model)

    async def close(self) -> None:
        """End the live session: drop queued prompts, stop its agent, end subscriptions."""
        if self._closed:
            return
        self._closed = True
        self._worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._worker
        while not self._turns.empty():
            turn = self._turns.get_nowait()
            turn.done.set_result(self._ended(turn, "the session was closed", 1))
        await self.engine.close()
        self._publish({"type": "closed"})
        self._queues.clear()

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
                self._turn_began = len(self.history)
            turn.done.set_result(ended)
            if not self._queues and not self.busy:
                self._on_closed(self)

    async def _run(self, turn: _Turn) -> Event:
        self._turn_began = len(self.history)
        self._publish(
            {
                "type": "turn_started",
                "turn": turn.number,
                "client": turn.client,
                "prompt": turn.text,
            }
        )
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
        code = 130 if stop == "cancelled" else 1 if failed or stop == "error" else 0
        return self._ended(turn, None, code)

    def _ended(self, turn: _Turn, error: str | None, code: int) -> Event:
        event = {
            "type": "turn_ended",
            "turn": turn.number,
            "client": turn.client,
            "error": error,
            "exit": code,
        }
        self._publish(event)
        return event

    # ----- events and questions ---------------------------------------------------------

    def _on_engine_event(self, event: BaseEvent) -> None:
        self._event(event)

    def _event(self, event: BaseEvent) -> Event:
        data = event.to_dict()
        self._publish(data)
        return data

    def _publish(self, data: Event) -> None:
        self.history.append(data)
        for queue in self._queues.values():
            queue.put_nowait(data)

    async def _ask(self, request: PermissionRequested) -> Answer | Refusal:
        waiting: asyncio.Future[Answer | Refusal] = asyncio.get_running_loop().create_future()
        self._asked[request.id] = waiting
        self._publish(
            {
                "type": "permission_asked",
                "id": request.id,
                "title": request.title,
                "kind": request.kind,
            }
        )
        try:
            return await waiting
        finally:
            self._asked.pop(request.id, None)


class Hub:
    """Every live session of this server; see the module docstring.

    `make_engine` builds the engine of a new live session from the client's options
    (default: `build_engine`, as the `avatar` command does); `keep_warm`: a new session's
    agent is one started beforehand (`avatar.server.warm`), and another starts for the next.
    """

    def __init__(
        self, make_engine: Callable[[OpenOptions], Engine] = build_engine, *, keep_warm: bool = True
    ) -> None:
        self.make_engine = make_engine
        #: Keep an agent started for the next session of each provider and project.
        self.keep_warm = keep_warm
        self.warm = WarmAgents()
        self._live: list[LiveSession] = []
        self._opening = asyncio.Lock()  # two clients resuming one session share it
        self._libraries: dict[Path, Engine] = {}
        self._closing: set[asyncio.Task[None]] = set()

    async def open(
        self,
        options: OpenOptions,
        *,
        client: str,
        resume: str | None = None,
        continue_last: bool = False,
        session_id: str | None = None,
        source: str | None = None,
        worktree: str | None = None,
        one_shot: bool = False,
        wait: bool = True,
        replay: bool = True,
        answers: bool = False,
        on_events: Callable[[AsyncIterator[Event]], None] | None = None,
        engine: Engine | None = None,
        entered: Callable[[Worktree], None] | None = None,
    ) -> LiveSession:
        """A live session for `client`: the live one `resume` (or `session_id`) names when
        one is live, else a session opened as `Engine.open` opens it (`worktree`: in a new
        git worktree, `""` a generated name; `one_shot`: a new session that will run one
        turn, `Engine.one_shot`; `wait`: wait for a session another process holds).

        `on_events` receives the client's subscription (`LiveSession.subscribe` with
        `replay` and `answers`) before the session opens, so that the events of opening it
        (`session`, notices) reach the client too; without it the caller subscribes.
        `engine`: one the caller built (its config notices said), instead of `make_engine`;
        `entered`: told the worktree made for the session, before it opens."""
        ref = resume or session_id
        async with self._opening:
            live = self.get(ref) if ref else None
            if live is not None:
                if on_events is not None:
                    on_events(live.subscribe(client, replay=replay, answers=answers))
                return live
            said: list[BaseEvent] = []
            engine = engine or self.make_engine(options)
            if worktree is None and self.keep_warm:  # (a worktree is a project of its own)
                engine, said = await self.warm.take(engine)
            engine.wait_busy = wait
            engine.one_shot = one_shot
            live = LiveSession(engine, self._forget)
            live.opener = client
            for event in said:  # what starting its agent said, before the session opened
                live._on_engine_event(event)
            if on_events is not None:
                on_events(live.subscribe(client, replay=replay, answers=answers))
            try:
                if worktree is not None:
                    made = await engine.enter_worktree(worktree or None)
                    if entered is not None:
                        entered(made)
                await engine.open(
                    resume=resume,
                    continue_last=continue_last,
                    session_id=session_id,
                    source=source,
                )
            except BaseException:
                await live.close()
                raise
            self._live.append(live)
            return live

    def live(self) -> list[LiveInfo]:
        """Every live session, oldest first (`avatar ps`)."""
        return [live.info() for live in self._live if not live.closed]

    def get(self, ref: str) -> LiveSession | None:
        """The live session whose id is `ref` or starts with it; None when none is live; a
        UsageError when the prefix names more than one."""
        exact = [s for s in self._live if s.session_id == ref]
        if exact:
            return exact[0]
        found = [s for s in self._live if ref and s.session_id.startswith(ref)]
        if len(found) > 1:
            ids = ", ".join(s.session_id for s in found)
            raise UsageError(f"session prefix '{ref}' names more than one live session: {ids}")
        return found[0] if found else None

    def library(self, cwd: Path, options: OpenOptions | None = None) -> Library:
        """The session library of the project at `cwd` (`Engine.library`), kept between
        calls."""
        root = cwd.resolve()
        engine = self._libraries.get(root)
        if engine is None:
            engine = self.make_engine(options or OpenOptions(cwd=root))
            self._libraries[root] = engine
        return engine.library

    def _forget(self, live: LiveSession) -> None:
        if live in self._live:
            self._live.remove(live)
        task = asyncio.ensure_future(live.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        """Close every live session (their agents stop) and the engines kept for listing."""
        live, self._live = self._live, []
        for session in live:
            await session.close()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
        for engine in self._libraries.values():
            await engine.close()
        self._libraries.clear()
        await self.warm.close()

    def sessions(self) -> Sequence[LiveSession]:
        """The live sessions themselves, oldest first."""
        return [s for s in self._live if not s.closed]
