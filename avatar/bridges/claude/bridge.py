"""Claude Code behind avatar's session API: one persistent `claude -p` stream-json process.

The process is started when a session is opened, with the session on its command line:
`--session-id <uuid>` for a new session (so the id is known before the first turn),
`--resume <id>` to resume or continue, `--resume <id> --fork-session --session-id <uuid>` to
fork. The engine resolves the session to resume or fork (`OpenRequest.info`, from its own
reader of Claude Code's files, `BridgeContext.store`); the bridge never looks it up again.

Each turn is one `Turn`: `send()` writes the user line, and the stdout reader
(`process`) routes claude's messages, translated (`stream`), into that turn
until its `result`. Interrupting sends the CLI's own `interrupt` control request; if the CLI
does not confirm (or the turn does not end within a grace), the process is stopped and the
next turn restarts it with `--resume`, so the session stays resumable either way. A turn
whose caller stopped reading is simply a `Turn` not finished when the next `send` starts: it
is interrupted and drained first, so its output never leaks into the next answer.

Modules beside this one: `stream` (protocol and translation, no I/O), `process` (the
process, its stdout reader, control requests and the routing of its output into turns),
`launch` and `starting` (what claude starts with, and a claude started ahead on a new session
of its own, adopted by the next new session: the engine's for a cold one-shot, `warm_up`'s for
the server's next one),
`permission` (scope and policy answers to permission requests), `state` (the open session as
one value: fresh, on disk or a pending fork, and the arguments that restart claude on it);
where transcripts live and writing a fork left without a turn are Claude Code's file format
(`avatar.sessions.claude`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from avatar.bridges.base import BaseBridge, BridgeContext, OpenRequest
from avatar.bridges.claude.argv import mcp_env, permission_mode
from avatar.bridges.claude.launch import ClaudeAhead
from avatar.bridges.claude.permission import PermissionDesk
from avatar.bridges.claude.process import ClaudeProcess
from avatar.bridges.claude.starting import ClaudeStarter
from avatar.bridges.claude.state import ClaudeSession, Fresh, OnDisk, PendingFork
from avatar.bridges.claude.stream import StreamTranslator, user_message
from avatar.bridges.turn import Turn, TurnSignal
from avatar.core.errors import ProviderError, SessionNotFoundError, UsageError
from avatar.core.events import BaseEvent, Error, Notice, OpenHow, SessionStarted, TurnFinished
from avatar.core.ids import UUID_RE, new_uuid
from avatar.core.prompts import Prompt
from avatar.providers.capabilities import SessionCapabilities
from avatar.sessions.claude import transcript_path, write_fork
from avatar.sessions.types import newest

if TYPE_CHECKING:
    from avatar.sessions.types import SessionInfo

__all__ = ["INTERRUPT_GRACE", "ClaudeBridge", "write_fork"]

# How long an interrupt may take to end the turn before the process is stopped instead.
INTERRUPT_GRACE = 5.0


class ClaudeBridge(BaseBridge):
    """Claude Code through its stream-json mode; see the module docstring for the protocol."""

    def __init__(self, ctx: BridgeContext) -> None:
        super().__init__(ctx)
        self.capabilities = SessionCapabilities.named(
            "list", "resume", "continue_last", "fork", "delete", "cancel"
        )
        self.executable: str | None = None
        #: The model asked for (`--model` of the next process, `set_model` of the running one).
        self.model = ctx.model
        self.plan = False  # plan mode, applied before the next turn (`set_plan`)
        self._cwd = ctx.cwd  # where claude runs: the session's own project directory
        self._proc: ClaudeProcess | None = None
        self._translator = StreamTranslator()  # the latest process's (for status after it)
        self._turn: Turn | None = None  # the latest turn; open while not finished
        self._session: ClaudeSession | None = None  # what claude has of the open session
        self._permissions = PermissionDesk(ctx)
        self._tasks: set[asyncio.Task[None]] = set()  # permission answers, cancel watchdogs
        self._held_said: str | None = None  # the notice of what was held back, once said
        self._starter = ClaudeStarter(ctx, self._on_control)  # (claude started ahead too)

    # ----- observation ------------------------------------------------------------------------

    @property
    def process_pid(self) -> int | None:
        """The pid of the running claude process (None when none runs)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        """True while a turn is open: started and not finished (an abandoned one included)."""
        return self._turn is not None and not self._turn.finished

    @property
    def cwd(self) -> Path:
        """The directory claude runs in (a resumed session's own project directory)."""
        return self._cwd

    @property
    def model_in_use(self) -> str | None:
        """The model claude reported for the running process, else the one asked for."""
        return self._translator.model or self.model

    def status(self) -> dict[str, Any]:
        """Process, model and cost facts for `/status`."""
        out: dict[str, Any] = {}
        if self._proc is not None:
            out["pid"] = self._proc.pid
        if self.model_in_use:
            out["model"] = self.model_in_use
        if self._translator.cost_usd is not None:
            out["cost_usd"] = round(self._translator.cost_usd, 6)
        return out

    # ----- lifecycle --------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        # The engine hands over the complete environment; pass exactly that (plus the spec's,
        # and the MCP env values and headers `--mcp-config` refers to, kept off the argv).
        base = dict(self.ctx.env) if self.ctx.env else dict(os.environ)
        return {**base, **self.ctx.spec.env, **mcp_env(self.ctx.settings.mcp_servers)}

    async def start(self) -> None:
        """Find the executable; the process itself starts when a session is opened."""
        self.executable = self._starter.find()

    async def stop(self) -> None:
        """Stop the process (close stdin, wait, terminate, kill); safe to call twice."""
        await self._stop_process()
        ahead = self._starter.ahead()
        if ahead is not None:
            await self._starter.drop(ahead)
        tasks = list(self._tasks)  # each removes itself from the set as it ends
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._write_pending_fork()

    async def _spawn(
        self, session_args: list[str], cwd: Path, ahead: ClaudeAhead | None = None
    ) -> None:
        """Start claude on `session_args` in `cwd`: `ahead`'s process where it was started as
        this one would be (else it is stopped)."""
        await self._stop_process()
        launch = self._starter.launch(session_args, cwd, self.model)
        said = launch.held.notice(self.name, cwd)
        if said and said != self._held_said:  # once, not again at each restart
            self._held_said = said
            self._notice(said)
        if ahead is not None and ahead.launch.same_as(launch):
            self._proc = await self._starter.adopt(ahead, self.model)
        else:
            if ahead is not None:
                await self._starter.drop(ahead)
            self._proc = await self._starter.start(launch, self.model)
        if self._session is not None and self._translator.session_id == self._session.session_id:
            # The same session in a new process (claude died): its cost goes on from there.
            self._proc.translator.cost_before = self._translator.cost_usd or 0.0
        self._translator, self._cwd = self._proc.translator, cwd

    async def warm_up(self) -> None:
        """Start claude now on a new session of its own, for the next `open()` of a new
        session to take (claude writes nothing of a session before its first turn: unused,
        it leaves none behind)."""
        if self._proc is None and self._session is None:
            await self._starter.warm_up(self.model)

    async def _stop_process(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        await proc.stop()  # its open turn, if any, gets `died` as stdout ends
        if proc.turns_done and self._session is not None:  # claude has written it (a fork too)
            self._session = OnDisk(self._session.session_id)

    def _on_control(self, proc: ClaudeProcess, turn: Turn | None, msg: dict[str, Any]) -> None:
        # Answered in a task: the stdout reader must keep reading meanwhile.
        self._background(self._permissions.answer(proc, turn, msg))

    def _background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ----- opening sessions -------------------------------------------------------------------

    async def open(self, request: OpenRequest) -> SessionStarted:
        """Open a session as `request` asks; a resume or fork uses the session the engine
        resolved (`request.info`; None means there is no such session on disk)."""
        if request.mode == "fork" and request.info is None:
            raise SessionNotFoundError(f"no claude session {request.session_id!r}")
        if request.mode == "new" and request.session_id is not None:
            self._check_new_id(request.session_id)
        await self._leave()
        if request.mode != "new" and (unused := self._starter.ahead()) is not None:
            await self._starter.drop(unused)  # (started for a new session)
        if request.mode == "resume":
            if request.info is not None:
                return await self._reopen(request.info, "resumed")
            ref = request.session_id
            self._notice(f"no claude session {ref!r} on disk; opened a new session", "warning")
        elif request.mode == "continue":
            store = self.ctx.store
            latest = newest(store.list(self.ctx.cwd)) if store is not None else None
            if latest is not None:
                return await self._reopen(latest, "continued")
            self._notice("no earlier claude session here; opened a new session")
        elif request.mode == "fork":
            assert request.info is not None
            return await self._fork(request.info)
        else:
            return await self._new(request.session_id)
        return await self._new(None)

    def _started(self, how: OpenHow) -> SessionStarted:
        assert self.session_id is not None
        return SessionStarted(
            session_id=self.session_id,
            provider=self.name,
            how=how,
            model=self.model_in_use,
            cwd=str(self._cwd),
        )

    def _session_cwd(self, info: SessionInfo) -> Path:
        """Where to run to resume `info`: Claude Code finds sessions only in their project."""
        if info.cwd and Path(info.cwd).is_dir():
            recorded = Path(info.cwd)
            if os.path.realpath(recorded) != os.path.realpath(self.ctx.cwd):
                self._notice(f"session {info.id} belongs to {recorded}; claude runs there")
            return recorded
        return self.ctx.cwd

    def _notice(self, message: str, level: Literal["info", "warning"] = "info") -> None:
        self.ctx.emit(Notice(message=message, level=level))

    def _check_new_id(self, session_id: str) -> None:
        if not UUID_RE.fullmatch(session_id):
            raise UsageError(f"claude session ids are UUIDs, not {session_id!r}")
        # Claude refuses a --session-id already in use; say so before starting it.
        store = self.ctx.store
        if store is not None and any(s.id == session_id for s in store.find(session_id)):
            raise UsageError(f"claude session {session_id} already exists")

    async def _new(self, session_id: str | None) -> SessionStarted:
        ahead = self._starter.ahead()
        if session_id is None and ahead is not None:  # claude started ahead on its own
            return await self._begin(ahead.session, self.ctx.cwd, "new", ahead)
        if ahead is not None:
            await self._starter.drop(ahead)
        return await self._begin(Fresh(session_id or new_uuid()), self.ctx.cwd, "new")

    async def _reopen(self, info: SessionInfo, how: OpenHow) -> SessionStarted:
        return await self._begin(OnDisk(info.id), self._session_cwd(info), how)

    async def _fork(self, parent: SessionInfo) -> SessionStarted:
        fork = PendingFork(new_uuid(), parent)
        return await self._begin(fork, self._session_cwd(parent), "forked")

    async def _begin(
        self, session: ClaudeSession, cwd: Path, how: OpenHow, ahead: ClaudeAhead | None = None
    ) -> SessionStarted:
        """Start claude on `session` in `cwd` (`ahead`'s, where it fits); it is the open
        session from now on."""
        await self._spawn(session.argv(), cwd, ahead)
        self._session, self.session_id = session, session.session_id
        return self._started(how)

    async def _leave(self) -> None:
        """Before opening another session: stop claude; a fork left without a turn is
        written to disk."""
        await self._stop_process()
        self._write_pending_fork()

    def _write_pending_fork(self) -> None:
        # Claude Code writes a fork only with its first turn; a fork opened and left at once
        # (`avatar session fork ID`) is written here the way Claude Code writes one.
        fork = self._session
        if not isinstance(fork, PendingFork):
            return
        target = self._transcript(fork.session_id)
        parent = fork.parent
        source = Path(parent.path) if parent.path else self._transcript(parent.id)
        if not target.exists() and source.is_file():
            with contextlib.suppress(OSError):
                write_fork(source, target, fork.session_id)
        # Written, or not writable: claude is not asked to make this fork again.
        sid = fork.session_id
        self._session = OnDisk(sid) if target.exists() else Fresh(sid)

    def _transcript(self, session_id: str) -> Path:
        return transcript_path(self._env(), self._cwd, session_id)

    # ----- model ------------------------------------------------------------------------------

    async def set_model(self, model: str) -> None:
        """Switch model (the CLI's `set_model` control request); during a turn it is applied
        before the next one, and a restarted process gets it as `--model`."""
        self.model = model
        self._translator.model = None  # what claude reported is no longer what runs next
        proc = self._proc
        if proc is not None and proc.alive and not self.running:
            await self._apply_model(proc)

    async def _apply_model(self, proc: ClaudeProcess) -> None:
        model = self.model
        if not model:
            return
        proc.model = model  # one attempt per switch, whatever the CLI answers
        await self._switch(proc, model, "set_model", model=model)

    async def _switch(self, proc: ClaudeProcess, to: str, subtype: str, **fields: str) -> None:
        """Send a control request that switches something; a notice when it fails."""
        try:
            answer = await proc.control(subtype, **fields)
            failure = answer.get("error") if answer.get("subtype") != "success" else None
        except (ProviderError, TimeoutError) as e:
            failure = str(e) or "no answer"
        if failure:
            self._notice(f"claude did not switch to {to}: {failure}", "warning")

    # ----- turns ------------------------------------------------------------------------------

    @property
    def takes_images(self) -> bool:
        """Claude Code takes image blocks in a stream-json user message."""
        return True

    async def send(self, prompt: str | Prompt) -> AsyncIterator[BaseEvent]:
        """Run one turn: write the user line, yield events until the turn's `result`."""
        prompt = Prompt.of(prompt)
        await self._settle()
        await self._ensure_process()
        proc = self._proc
        assert proc is not None
        await self._apply_plan(proc)
        turn = self._turn = proc.begin_turn()
        try:
            await proc.write(user_message(prompt))
        except ProviderError:
            turn.put(TurnSignal("died", proc))
        while True:
            item = await turn.events.get()
            if isinstance(item, TurnSignal):
                async for event in self._died(item.payload, turn):
                    yield event
                return
            yield item
            # The reader finished the turn before queueing TurnFinished, so a caller that
            # stops reading right here has not abandoned it.
            if isinstance(item, TurnFinished) or self._turn is not turn:
                return  # done, or a later turn took over from this abandoned one

    @property
    def can_plan(self) -> bool:
        """Claude Code has a plan mode (`--permission-mode plan`)."""
        return True

    async def set_plan(self, on: bool) -> None:
        """Plan mode on or off from the next turn (sent before it, to the running process)."""
        self.plan = on

    async def _apply_plan(self, proc: ClaudeProcess) -> None:
        if proc.plan == self.plan:
            return
        proc.plan = self.plan  # one attempt per change, whatever the CLI answers
        mode = "plan" if self.plan else permission_mode(self.ctx.settings, self.name)
        await self._switch(proc, f"{mode} mode", "set_permission_mode", mode=mode)

    async def _settle(self) -> None:
        """Before a turn: end one left unread and apply a model switch made during it."""
        turn = self._turn
        if turn is not None and not turn.finished:
            await self._end_abandoned(turn)
        proc = self._proc
        if proc is not None and proc.alive and proc.model != self.model:
            await self._apply_model(proc)

    async def _end_abandoned(self, turn: Turn) -> None:
        # Its output would otherwise be read as the next turn's (and its result end it).
        turn.request_cancel()  # its permission questions answer no meanwhile
        proc = self._proc
        if proc is not None and proc.alive:
            try:
                await asyncio.wait_for(self._interrupt_and_drain(proc, turn), INTERRUPT_GRACE)
            except (TimeoutError, ProviderError):
                await self._stop_process()  # the next turn resumes in a fresh process
        if not turn.finished:
            turn.finish("cancelled")

    async def _interrupt_and_drain(self, proc: ClaudeProcess, turn: Turn) -> None:
        answer = await proc.control("interrupt")
        if answer.get("subtype") != "success":
            raise ProviderError("interrupt refused")
        while not turn.finished:
            item = await turn.events.get()
            if isinstance(item, TurnSignal):
                await self._stop_process()
                return
            if isinstance(item, TurnFinished):
                return

    async def _ensure_process(self) -> None:
        proc = self._proc
        if proc is not None and proc.alive:
            return
        await self._stop_process()
        session = self._session
        if session is None:
            self.ctx.emit(await self._new(None))
            return
        if not isinstance(session, OnDisk) and self._transcript(session.session_id).exists():
            # Claude wrote it during a turn cut short before its end: resume, never restart.
            session = self._session = OnDisk(session.session_id)
        await self._spawn(session.argv(), self._cwd)

    async def _died(self, proc: ClaudeProcess, turn: Turn) -> AsyncIterator[BaseEvent]:
        """The process ended mid-turn: a cancelled turn if we stopped it, else an error."""
        if proc is self._proc:
            await self._stop_process()
        else:
            await proc.stop()
        if turn.cancelling:
            turn.finish("cancelled")
            yield TurnFinished(stop_reason="cancelled")
            return
        how, detail = await proc.exit_report()
        turn.finish("error")
        last = detail.strip().splitlines()[-1] if detail else ""
        message = f"claude {how} during the turn" + (f": {last}" if last else "")
        yield Error(message=message, detail=detail)

    # ----- cancel -----------------------------------------------------------------------------

    async def cancel(self) -> None:
        """Interrupt the running turn with the CLI's `interrupt`; stop the process if the CLI
        refuses, does not answer, or the turn has not ended INTERRUPT_GRACE seconds later."""
        turn, proc = self._turn, self._proc
        if turn is None or not turn.request_cancel():
            return
        try:
            answer = (
                await asyncio.wait_for(proc.control("interrupt"), INTERRUPT_GRACE) if proc else {}
            )
            ok = answer.get("subtype") == "success"
        except (ProviderError, TimeoutError):
            ok = False
        if not ok:
            # The turn sees the process end and finishes as cancelled; the next turn
            # restarts claude with --resume.
            await self._stop_process()
        elif not turn.finished:
            self._background(self._stop_unless_finished(turn))

    async def _stop_unless_finished(self, turn: Turn) -> None:
        await asyncio.sleep(INTERRUPT_GRACE)
        if not turn.finished and self._turn is turn:
            await self._stop_process()
