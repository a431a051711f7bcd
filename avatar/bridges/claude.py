"""Claude Code behind avatar's session API: one persistent `claude -p` stream-json process.

The process is started when a session is opened, with the session on its command line:
`--session-id <uuid>` for a new session (so the id is known before the first turn),
`--resume <id>` to resume or continue, `--resume <id> --fork-session --session-id <uuid>` to
fork. Each turn writes one user line and reads until the turn's `result`. Interrupting sends
the CLI's own `interrupt` control request; if the CLI does not confirm, the process is stopped
and the next turn restarts it with `--resume`, so the session stays resumable either way.
Sessions are listed, read and deleted from Claude Code's own files (`avatar.sessions.claude`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from avatar.bridges.base import BaseBridge, BridgeContext, SessionCapabilities
from avatar.bridges.claude_stream import (
    TOOL_KINDS,
    StreamTranslator,
    build_argv,
    control_error,
    control_request,
    control_response,
    permission_answer,
    tool_title,
    user_message,
)
from avatar.bridges.process import AgentProcess
from avatar.errors import ProviderError, SessionNotFoundError, UsageError
from avatar.events import (
    BaseEvent,
    Error,
    Notice,
    PermissionRequested,
    SessionStarted,
    TurnFinished,
)
from avatar.providers import find_executable
from avatar.sessions.claude import UUID_RE, ClaudeStore, claude_dir, project_slug
from avatar.sessions.types import SessionInfo

# How long an interrupt may take to end the turn before the process is stopped instead.
INTERRUPT_GRACE = 5.0
# How long a control request (interrupt, set_model) may wait for its answer.
CONTROL_TIMEOUT = 10.0

_EOF = object()


class ClaudeBridge(BaseBridge):
    """Claude Code through its stream-json mode; see the module docstring for the protocol."""

    def __init__(self, ctx: BridgeContext) -> None:
        super().__init__(ctx)
        self.capabilities = SessionCapabilities(
            can_list=True,
            can_resume=True,
            can_continue_last=True,
            can_fork=True,
            can_delete=True,
            can_cancel=True,
        )
        # The store sees the env claude runs with (HOME, CLAUDE_CONFIG_DIR from provider env).
        self.store = ClaudeStore(ctx.spec.name, self._env(), ctx.avatar_home)
        self.executable: str | None = None
        self.model = ctx.model
        self.cwd = ctx.cwd
        self._proc: AgentProcess | None = None
        self._reader: asyncio.Task[None] | None = None
        self._messages: asyncio.Queue[Any] = asyncio.Queue()
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._translator = StreamTranslator()
        self._turn: object | None = None  # the running turn (its generator's token)
        self._cancelling = False
        self._abandoned = False  # a turn whose events nobody read to the end
        self._model_pending = False  # set_model during a turn: applied before the next
        self._stdout_junk: list[str] = []
        self._fork_of: str | None = None  # parent id while a fork has not been written yet

    # ----- lifecycle --------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        # The engine hands over the complete environment; pass exactly that (plus the spec's).
        base = dict(self.ctx.env) if self.ctx.env else dict(os.environ)
        return {**base, **self.ctx.spec.env}

    async def start(self) -> None:
        """Find the executable; the process itself starts when a session is opened."""
        program = self.ctx.spec.executable or "claude"
        found = find_executable(program, self._env().get("PATH"))
        if found is None:
            hint = f" (install: {self.ctx.spec.install_hint})" if self.ctx.spec.install_hint else ""
            raise ProviderError(f"{self.name}: {program} not found{hint}")
        self.executable = found

    async def stop(self) -> None:
        """Stop the process (close stdin, wait, terminate, kill); safe to call twice."""
        await self._stop_process()
        self._write_pending_fork()

    async def _spawn(self, session_args: list[str], cwd: Path) -> None:
        await self._stop_process()
        if self.executable is None:
            await self.start()
        assert self.executable is not None
        argv = build_argv(
            self.ctx.spec.command or ("claude",),
            self.executable,
            settings=self.ctx.settings,
            provider=self.name,
            model=self.model,
            system_prompt=self.ctx.system_prompt,
            add_dirs=[str(d) for d in self.ctx.additional_dirs],
            session_args=session_args,
        )
        self._proc = await AgentProcess.spawn(
            self.name, argv, self._env(), cwd, self.ctx.spec.install_hint
        )
        self.cwd = cwd
        self._messages = asyncio.Queue()
        self._translator = StreamTranslator()
        self._reader = asyncio.get_running_loop().create_task(
            self._read_stdout(self._proc, self._messages)
        )

    async def _stop_process(self) -> None:
        proc, self._proc = self._proc, None
        reader, self._reader = self._reader, None
        if proc is not None:
            await proc.stop()
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
        for fut in self._pending.values():
            if not fut.done():
                fut.cancel()
        self._pending.clear()

    async def _read_stdout(self, proc: AgentProcess, queue: asyncio.Queue[Any]) -> None:
        """Route every stdout line: control answers to their waiters, the rest to the turn."""
        stream = proc.process.stdout
        assert stream is not None
        try:
            while True:
                try:
                    line = await stream.readline()
                except ValueError:  # a line over the stream limit: drop it, keep reading
                    continue
                if not line:
                    break
                try:
                    msg = json.loads(line)
                except ValueError:
                    self._stdout_junk = [*self._stdout_junk[-4:], line.decode("utf-8", "replace")]
                    continue
                if not isinstance(msg, dict):
                    continue
                if msg.get("type") == "control_response":
                    response = msg.get("response") or {}
                    fut = self._pending.pop(str(response.get("request_id")), None)
                    if fut is not None and not fut.done():
                        fut.set_result(response)
                    continue
                queue.put_nowait(msg)
        finally:
            queue.put_nowait(_EOF)

    async def _write(self, message: dict[str, Any]) -> None:
        proc = self._proc
        if proc is None or proc.process.stdin is None or proc.returncode is not None:
            raise ProviderError(f"{self.name}: the claude process is not running")
        data = (json.dumps(message, ensure_ascii=False) + "\n").encode()
        try:
            proc.process.stdin.write(data)
            await proc.process.stdin.drain()
        except (ConnectionError, RuntimeError) as e:
            raise ProviderError(f"{self.name}: cannot write to claude: {e}") from None

    async def _control(self, subtype: str, **fields: Any) -> dict[str, Any]:
        """Send a control request and wait for its answer (`{"subtype": "success"|"error"}`)."""
        request_id = f"avatar-{uuid.uuid4().hex[:12]}"
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = fut
        await self._write(control_request(request_id, subtype, **fields))
        try:
            return await asyncio.wait_for(fut, CONTROL_TIMEOUT)
        finally:
            self._pending.pop(request_id, None)

    # ----- opening sessions -------------------------------------------------------------------

    def _started(self, how: Any) -> SessionStarted:
        assert self.session_id is not None
        return SessionStarted(
            session_id=self.session_id,
            provider=self.name,
            how=how,
            model=self.model,
            cwd=str(self.cwd),
        )

    def _find(self, session_id: str) -> SessionInfo | None:
        try:
            return self.store.locate(session_id)
        except (SessionNotFoundError, UsageError):
            return None

    def _session_cwd(self, info: SessionInfo) -> Path:
        """Where to run to resume `info`: Claude Code finds sessions only in their project."""
        if info.cwd and Path(info.cwd).is_dir():
            recorded = Path(info.cwd)
            if os.path.realpath(recorded) != os.path.realpath(self.ctx.cwd):
                self.ctx.emit(
                    Notice(message=f"session {info.id} belongs to {recorded}; claude runs there")
                )
            return recorded
        return self.ctx.cwd

    async def new_session(self, session_id: str | None = None) -> SessionStarted:
        """A fresh session whose id avatar chooses now (`--session-id`)."""
        await self._finish_fork()
        if session_id is not None:
            if not UUID_RE.fullmatch(session_id):
                raise UsageError(f"claude session ids are UUIDs, not {session_id!r}")
            if self._find(session_id) is not None:
                raise UsageError(f"claude session {session_id} already exists")
        sid = session_id or str(uuid.uuid4())
        await self._spawn(["--session-id", sid], self.ctx.cwd)
        self.session_id = sid
        return self._started("new")

    async def resume_session(self, session_id: str) -> SessionStarted:
        """Reopen a recorded session (`--resume`); an unknown id opens a new one, with a notice."""
        await self._finish_fork()
        info = self._find(session_id)
        if info is None:
            self.ctx.emit(
                Notice(
                    message=f"no claude session {session_id!r} on disk; opened a new session",
                    level="warning",
                )
            )
            return await self.new_session()
        await self._spawn(["--resume", info.id], self._session_cwd(info))
        self.session_id = info.id
        return self._started("resumed")

    async def continue_last(self) -> SessionStarted:
        """Resume the newest session of this cwd (found on disk, so its id is known now)."""
        await self._finish_fork()
        sessions = self.store.list(self.ctx.cwd)
        if not sessions:
            self.ctx.emit(Notice(message="no earlier claude session here; opened a new session"))
            return await self.new_session()
        newest = max(sessions, key=_recency)
        await self._spawn(["--resume", newest.id], self.ctx.cwd)
        self.session_id = newest.id
        return self._started("continued")

    async def fork_session(self, session_id: str) -> SessionStarted:
        """A new session starting with a copy of another's history (`--fork-session`)."""
        await self._finish_fork()
        info = self._find(session_id)
        if info is None:
            raise SessionNotFoundError(f"no claude session {session_id!r}")
        new = str(uuid.uuid4())
        cwd = self._session_cwd(info)
        await self._spawn(["--resume", info.id, "--fork-session", "--session-id", new], cwd)
        self.session_id = new
        self._fork_of = info.id
        return self._started("forked")

    async def _finish_fork(self) -> None:
        """Before leaving a fork: make sure it exists on disk even if no turn ran on it."""
        if self._fork_of is not None:
            await self._stop_process()
            self._write_pending_fork()

    def _write_pending_fork(self) -> None:
        # Claude Code writes a fork only with its first turn; a fork opened and left at once
        # (`avatar session fork ID`) is written here the way Claude Code writes one: the
        # parent's entries, each re-labelled with the new session id.
        parent, self._fork_of = self._fork_of, None
        if parent is None or self.session_id is None:
            return
        target = claude_dir(self._env(), self.store.home()) / "projects"
        target = target / project_slug(os.path.realpath(self.cwd)) / f"{self.session_id}.jsonl"
        info = self._find(parent)
        if target.exists() or info is None or info.path is None:
            return
        with contextlib.suppress(OSError):
            write_fork(Path(info.path), target, self.session_id)

    # ----- other session operations -----------------------------------------------------------

    async def list_sessions(self, cwd: Path | None = None) -> list[SessionInfo]:
        """Sessions from Claude Code's own files (no process involved)."""
        return self.store.list(cwd)

    async def delete_session(self, session_id: str) -> None:
        """Delete a session's transcript file."""
        if session_id == self.session_id and self._proc is not None:
            raise UsageError("cannot delete the session that is open")
        self.store.delete(session_id)

    async def set_model(self, model: str) -> None:
        """Switch model for the next turn (the CLI's `set_model` control request)."""
        self.model = model  # a restarted process gets it as --model
        self._model_pending = self._proc is not None and self._proc.returncode is None
        if self._model_pending and self._turn is None:
            await self._apply_model()

    async def _apply_model(self) -> None:
        self._model_pending = False
        with contextlib.suppress(ProviderError, TimeoutError):
            await self._control("set_model", model=self.model)

    def status(self) -> dict[str, Any]:
        """Process and cost facts for `/status`."""
        out: dict[str, Any] = {}
        if self._proc is not None:
            out["pid"] = self._proc.pid
        if self._translator.model:
            out["model"] = self._translator.model
        if self._translator.cost_usd is not None:
            out["cost_usd"] = round(self._translator.cost_usd, 6)
        return out

    # ----- turns ------------------------------------------------------------------------------

    async def _ensure_process(self) -> None:
        if self._proc is not None and self._proc.returncode is None:
            return
        if self.session_id is None:
            await self.new_session()
            return
        if self._fork_of is not None:  # the fork never got its first turn: start it again
            args = ["--resume", self._fork_of, "--fork-session", "--session-id", self.session_id]
        elif self._find(self.session_id) is not None:
            args = ["--resume", self.session_id]
        else:  # opened but never used (or its file is gone): start it under the same id
            args = ["--session-id", self.session_id]
        await self._spawn(args, self.cwd)

    async def _settle(self) -> None:
        """Before a turn: end one left unread and apply a model switch made during it."""
        alive = self._proc is not None and self._proc.returncode is None
        # A turn still marked running was dropped unfinished (its generator not closed yet).
        if (self._abandoned or self._turn is not None) and alive:
            try:
                await asyncio.wait_for(self._finish_abandoned(), INTERRUPT_GRACE)
            except (TimeoutError, ProviderError):
                await self._stop_process()  # the next turn resumes in a fresh process
        self._abandoned = False
        self._turn = None
        if self._model_pending and self._proc is not None and self._proc.returncode is None:
            await self._apply_model()
        while not self._messages.empty():  # leftovers between turns (e.g. set_model output)
            self._messages.get_nowait()

    async def _finish_abandoned(self) -> None:
        # Its events would otherwise be read as the next turn's (and its result end it).
        with contextlib.suppress(TimeoutError):
            await self._control("interrupt")
        while True:
            msg = await self._messages.get()
            if msg is _EOF:
                await self._stop_process()
                return
            if msg.get("type") == "control_request":
                rid = str(msg.get("request_id"))
                tool_input = (msg.get("request") or {}).get("input")
                await self._write(control_response(rid, permission_answer(False, tool_input)))
            elif msg.get("type") == "result":
                return

    async def send(self, prompt: str) -> AsyncIterator[BaseEvent]:
        """Run one turn: write the user line, yield events until the turn's `result`."""
        await self._settle()
        await self._ensure_process()
        self._translator.begin_turn()
        self._cancelling = False
        token = self._turn = object()
        finished = False
        try:
            try:
                await self._write(user_message(prompt))
            except ProviderError:
                finished = True
                async for event in self._died():
                    yield event
                return
            while True:
                msg = await self._messages.get()
                if msg is _EOF:
                    finished = True
                    async for event in self._died():
                        yield event
                    return
                if msg.get("type") == "control_request":
                    event = await self._answer_control(msg)
                    if event is not None:
                        yield event
                    continue
                if msg.get("type") == "control_cancel_request":
                    continue
                self._translator.cancelled = self._cancelling
                if msg.get("type") == "result":
                    # Settled before yielding: a caller may stop reading at TurnFinished.
                    finished = True
                    self._fork_of = None  # claude has written the fork by now
                    if self._turn is token:
                        self._turn = None
                for event in self._translator.feed(msg):
                    yield event
                if finished:
                    return
        finally:
            if self._turn is token:  # not when a later turn already took over
                self._turn = None
                self._abandoned = not finished

    async def _died(self) -> AsyncIterator[BaseEvent]:
        """The process ended mid-turn: a cancelled turn if we stopped it, else an error."""
        proc = self._proc
        await self._stop_process()
        if self._cancelling:
            yield TurnFinished(stop_reason="cancelled")
            return
        detail = ""
        how = "exited"
        if proc is not None:
            await proc.stderr_settled()
            detail = proc.stderr.text(20)
            how = f"exited ({proc.describe_exit()})"
        if not detail and self._stdout_junk:
            detail = "".join(self._stdout_junk).strip()
        last = detail.strip().splitlines()[-1] if detail.strip() else ""
        message = f"claude {how} during the turn" + (f": {last}" if last else "")
        yield Error(message=message, detail=detail or None)

    async def _answer_control(self, msg: dict[str, Any]) -> BaseEvent | None:
        """Answer a control request from the CLI; permission requests go to avatar's policy."""
        request_id = str(msg.get("request_id"))
        request = msg.get("request") or {}
        if request.get("subtype") != "can_use_tool":
            await self._write(control_error(request_id, f"unsupported: {request.get('subtype')}"))
            return None
        name = str(request.get("tool_name") or "tool")
        tool_input = request.get("input")
        event = PermissionRequested(
            id=str(request.get("tool_use_id") or request_id),
            title=tool_title(name, tool_input),
            kind=TOOL_KINDS.get(name, "other"),
        )
        if self._cancelling:
            allowed = False
        else:
            try:
                allowed = bool(await self.ctx.permission(event))
            except Exception:  # a broken asker must not hang the agent
                allowed = False
        event.decision = "allow" if allowed else "deny"
        await self._write(control_response(request_id, permission_answer(allowed, tool_input)))
        return event

    async def cancel(self) -> None:
        """Interrupt the running turn with the CLI's `interrupt`; stop the process if needed."""
        if self._turn is None or self._cancelling:
            return
        self._cancelling = True
        self._translator.cancelled = True
        try:
            answer = await asyncio.wait_for(self._control("interrupt"), INTERRUPT_GRACE)
            ok = answer.get("subtype") == "success"
        except (ProviderError, TimeoutError, asyncio.CancelledError):
            ok = False
        if not ok:
            # No interrupt support (or no answer): end the process; the turn sees EOF and
            # finishes as cancelled, and the next turn restarts claude with --resume.
            await self._stop_process()


def _recency(info: SessionInfo) -> tuple[float, str]:
    stamp = info.updated or info.created
    return (stamp.timestamp() if stamp else 0.0, info.id)


def write_fork(source: Path, target: Path, new_id: str) -> None:
    """Copy a transcript as a new session: every entry re-labelled with `new_id`."""
    from avatar.sessions.jsonl import TRANSCRIPT_LINE_CAP, LineStats, iter_records

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    with source.open("rb") as src, tmp.open("w", encoding="utf-8") as out:
        for entry in iter_records(src, LineStats(), max_line=TRANSCRIPT_LINE_CAP):
            if "sessionId" in entry:
                entry["sessionId"] = new_id
            out.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
    os.replace(tmp, target)
