"""AgentSession: one native conversation — its file, its context, its model, its turns.

Every change goes through `record_entry(entry)`: the entry is queued to the session file and
folded into the in-memory `SessionState` by the same code a resume uses, so the live context
and a resumed one cannot drift apart. A turn runs in its own task and hands events to the
caller through a queue; `abort()` cancels that task, and the loop records what was cut short.
Compaction is the session's `Compactor` (`avatar.native.agent.compacting`); keeping API keys out of
tools and records is its `Redactor` (`avatar.native.agent.redaction`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from avatar.core.errors import AvatarError, SessionNotFoundError
from avatar.core.events import (
    BaseEvent,
    Error,
    Notice,
    PermissionRequested,
    TurnFinished,
    Usage,
)
from avatar.native.agent.compacting import Compactor
from avatar.native.agent.config import SessionConfig
from avatar.native.agent.context import SessionState
from avatar.native.agent.loop import Agent, Emit
from avatar.native.agent.prompt import build_system_prompt
from avatar.native.agent.redaction import Redactor
from avatar.native.llm.types import Message, ToolCall, UsagePart
from avatar.native.store.entries import (
    BaseEntry,
    EntryUsage,
    InterruptedEntry,
    MessageEntry,
    ModelChangeEntry,
    SteeringEntry,
    ToolCallEntry,
    ToolResultEntry,
    new_entry_id,
)
from avatar.native.store.manager import SessionManager
from avatar.native.store.reading import index_record, read_state
from avatar.native.tools import default_tools
from avatar.native.tools.base import AgentToolResult, ToolContext, ToolKind
from avatar.native.tools.scope import ToolScope
from avatar.policy import sandbox
from avatar.policy.permissions import Refusal, allows

if TYPE_CHECKING:
    from avatar.core.prompts import Image
    from avatar.native.llm.base import LLMClient
    from avatar.native.models import ModelInfo
    from avatar.native.store.writer import SessionWriter

_END = object()
_TURN_STOPS = {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error"}


class AgentSession:
    """A native session: `start`/`resume`/`fork`, then `send_message` turns."""

    def __init__(self, config: SessionConfig, manager: SessionManager) -> None:
        self.config = config
        self.manager = manager
        self.model: ModelInfo | None = None
        self.state: SessionState | None = None
        self.writer: SessionWriter | None = None
        self.agent: Agent | None = None
        self.plan = False  # plan mode: read-only tools (see `set_plan`)
        self._clients: list[LLMClient] = []
        self._sandbox: sandbox.Sandbox | None = None
        self._turn: asyncio.Task[None] | None = None
        self._emit_to: Callable[[BaseEvent], None] | None = None
        self._aborting = False
        self._turn_base = (0, 0)  # the session's token totals when the running turn began
        self._dirty = False  # entries added since the last fsync + index update
        self.compactor = Compactor(self)
        self.tools = list(config.tools) if config.tools is not None else default_tools()
        self.system_prompt = build_system_prompt(config.cwd, self.tools, config.prompt_additions)
        self.redactor = Redactor(config.resolver, config.env)

    # -- opening ----------------------------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        """The open session's id."""
        return self.state.header.id if self.state else None

    def start(self, model: ModelInfo, session_id: str | None = None) -> str:
        """Create a new session (with `session_id` if given) on `model`; returns its id."""
        header, writer = self.manager.create(
            self.config.cwd,
            model=model.full_id,
            session_id=session_id,
            preset=self.config.preset,
        )
        self._open(SessionState(header), writer, model)
        return header.id

    def resume(
        self, session_id: str, model: ModelInfo | None = None, path: Path | None = None
    ) -> str:
        """Reopen a session from its file `path` (looked up when not given); its own model
        unless `model` is given (then a model change)."""
        path = path or self.manager.path_of(session_id)
        if path is None:
            raise SessionNotFoundError(f"no native session {session_id}")
        writer = self.manager.open_writer(session_id, path)
        try:
            state = read_state(path)
        except BaseException:
            writer.close()
            raise
        for warning in state.warnings:
            self._notice(warning, "warning")
        chosen = model or self._model_of(state)
        self._open(state, writer, chosen)
        if state.model != chosen.full_id:
            self.record_entry(ModelChangeEntry(model=chosen.full_id))
        return session_id

    def fork(self, session_id: str, model: ModelInfo | None = None) -> str:
        """Copy a session into a new one (parent untouched) and open the copy."""
        new_id = self.manager.fork(session_id, cwd=self.config.cwd)
        return self.resume(new_id, model)

    def _model_of(self, state: SessionState) -> ModelInfo:
        try:
            return self.config.resolver.resolve(state.model)
        except AvatarError as e:
            fallback = self.config.resolver.resolve(None)
            self._notice(f"{e}; using {fallback.full_id} instead", "warning")
            return fallback

    def _open(self, state: SessionState, writer: SessionWriter, model: ModelInfo) -> None:
        self.state = state
        self.writer = writer
        self.model = model
        scope = ToolScope(self.config.scope, self.config.cwd, self.config.additional_dirs)
        tool_env = self.redactor.tool_env(self.config.env)
        if self._sandbox is None:
            self._sandbox = sandbox.for_commands(scope, tool_env)
        tool_context = ToolContext(scope=scope, ask=self._ask, env=tool_env, sandbox=self._sandbox)
        self.agent = Agent(
            self._new_client(model), self.tools, tool_context, self.system_prompt, self
        )
        self.agent.plan = self.plan

    def _new_client(self, model: ModelInfo) -> LLMClient:
        client = self.config.client_factory(model, self.config.env, self._retry_notice)
        self._clients.append(client)
        return client

    # -- turns ------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True while a turn runs."""
        return self._turn is not None and not self._turn.done()

    async def send_message(
        self, text: str, images: tuple[Image, ...] = ()
    ) -> AsyncIterator[BaseEvent]:
        """Run one turn; yields avatar events, the last one `TurnFinished`. `images` go to the
        model with the message; the session file has only their `[image: name]` in `text`."""
        if self.agent is None:
            raise RuntimeError("no session is open")
        if self.running:
            raise RuntimeError("a turn is already running; steer it instead")
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._emit_to = queue.put_nowait
        self._aborting = False
        self._turn = asyncio.create_task(self._run_turn(text, images, queue.put_nowait))
        try:
            while True:
                event = await queue.get()
                if event is _END:
                    break
                yield event
        finally:
            if self.running:  # the consumer stopped listening: stop the turn too
                await self.abort()
            self._emit_to = None

    async def _run_turn(self, text: str, images: tuple[Image, ...], emit: Emit) -> None:
        assert self.agent is not None
        assert self.state is not None
        self._turn_base = (self.state.input_tokens, self.state.output_tokens)
        stop = "end_turn"
        try:
            self.record_entry(MessageEntry(role="user", text=text))
            self.state.messages[-1].images = images  # (for this run's calls only)
            reason = await self.agent.run(emit)
            stop = reason if reason in _TURN_STOPS else "end_turn"
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            self.record_entry(InterruptedEntry())
            stop = "cancelled"
        except AvatarError as e:
            detail = getattr(e, "stderr_tail", None)
            emit(Error(message=self.redactor.redact(str(e)), detail=detail))
            stop = "error"
        except Exception as e:  # a bug must still end the turn, never hang the caller
            failure = f"native agent failed: {type(e).__name__}: {e}"
            emit(Error(message=self.redactor.redact(failure)))
            stop = "error"
        finally:
            try:
                await self._persist()
            except Exception as e:
                emit(Error(message=f"could not save the session: {e}"))
            emit(TurnFinished(stop_reason=stop))  # type: ignore[arg-type]
            emit(_END)  # type: ignore[arg-type]

    def steer(self, text: str) -> bool:
        """Add text to the running turn (`Agent.steer`); False when none would read it."""
        return self.agent is not None and self.agent.steer(text)

    async def abort(self) -> None:
        """Stop the running turn: stream closed, tools killed, `interrupted` recorded."""
        task = self._turn
        if task is None or task.done():
            return
        if not self._aborting:
            self._aborting = True
            task.cancel()
        await asyncio.wait({task}, timeout=5.0)

    async def _persist(self) -> None:
        """fsync the file and refresh the index record (at every turn end)."""
        if self.writer is None or self.state is None or not self._dirty:
            return
        self._dirty = False
        await self.writer.async_sync()
        path = self.writer.path
        record = index_record(self.state, self.writer.size())
        self.manager.update_index(path, record)

    # -- AgentHooks -------------------------------------------------------------------------

    def context(self) -> list[Message]:
        """The messages for the next model call."""
        assert self.state is not None
        return self.state.context()

    def record_assistant(
        self,
        text: str,
        thinking: str,
        tool_calls: list[ToolCall],
        usage: UsagePart | None,
        stop_reason: str,
    ) -> None:
        """Record an assistant message and its tool calls."""
        assert self.model is not None
        entry_usage = None
        if usage is not None:
            entry_usage = EntryUsage(
                input=usage.input_tokens,
                output=usage.output_tokens,
                cache_read=usage.cache_read_tokens,
                cache_write=usage.cache_write_tokens,
                cost=self.model.cost(
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                ),
            )
        self.record_entry(
            MessageEntry(
                role="assistant",
                text=text,
                thinking=thinking or None,
                model=self.model.full_id,
                usage=entry_usage,
                stop_reason=stop_reason,
            )
        )
        for call in tool_calls:
            self.record_entry(ToolCallEntry(call_id=call.id, name=call.name, input=call.arguments))

    def record_tool_result(self, call: ToolCall, result: AgentToolResult) -> None:
        """Record a tool's result (secrets masked, also in the event shown after this)."""
        result.output = self.redactor.redact(result.output)
        self.record_entry(
            ToolResultEntry(
                call_id=call.id, name=call.name, output=result.output, is_error=result.is_error
            )
        )

    def record_steering(self, text: str) -> None:
        """Record steering text as a user message."""
        self.record_entry(SteeringEntry(text=text))

    def report_usage(self, emit: Emit) -> None:
        """Emit token totals, cost and context fill."""
        emit(self.usage_event())

    def usage_event(self) -> Usage:
        """The running (or last) turn's tokens, the session's cost and context, as an event
        (cache reads and writes are counted in the input: the store keeps them together)."""
        assert self.state is not None and self.model is not None
        return Usage(
            input_tokens=self.state.input_tokens - self._turn_base[0],
            output_tokens=self.state.output_tokens - self._turn_base[1],
            cost_usd=round(self.state.cost, 6),
            context_used=self.context_tokens(),
            context_size=self.model.context_window,
        )

    def estimated_context(self) -> int:
        """The context's size from its characters alone (the system prompt included)."""
        assert self.state is not None
        return self.state.chars_estimate(len(self.system_prompt))

    def context_tokens(self) -> int:
        """The context's size: reported by the provider, estimated for what came after."""
        assert self.state is not None
        return self.state.estimated_tokens(len(self.system_prompt))

    async def before_request(self, emit: Emit) -> None:
        """Compact automatically when the context passes the threshold."""
        await self.compactor.before_request(emit)

    async def on_overflow(self, emit: Emit) -> bool:
        """The provider rejected the context as too long: compact once, then retry."""
        return await self.compactor.on_overflow(emit)

    # -- compaction -------------------------------------------------------------------------

    async def compact(self) -> str:
        """Compact now (the REPL's /compact); returns what happened, in one line."""
        if self.state is None:
            return "no session is open"
        if self.running:
            return "a turn is running; compact when it has finished"
        message = await self.compactor.compact_now(self._emit)
        await self._persist()
        self._emit(self.usage_event())  # the context's use has changed
        return message

    # -- model ------------------------------------------------------------------------------

    def set_plan(self, on: bool) -> None:
        """Plan mode on or off from the next model call: read-only tools, the model told."""
        self.plan = on
        if self.agent is not None:
            self.agent.plan = on

    def set_model(self, model: ModelInfo) -> None:
        """Use `model` from the next model call on (recorded as a model change)."""
        if self.agent is None or self.model is None:
            self.model = model
            return
        if model.full_id == self.model.full_id:
            return
        self.model = model
        self.agent.client = self._new_client(model)
        self.record_entry(ModelChangeEntry(model=model.full_id))

    # -- closing ----------------------------------------------------------------------------

    async def close(self) -> None:
        """Finish any turn, flush and unlock the file, close HTTP clients."""
        if self.running:
            await self.abort()
        if self.writer is not None:
            with contextlib.suppress(Exception):
                await self._persist()
            self.writer.close()
            self.writer = None
        for client in self._clients:
            with contextlib.suppress(Exception):
                await client.aclose()
        self._clients.clear()
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    def status(self) -> dict[str, Any]:
        """Facts for `/status`."""
        if self.state is None or self.model is None:
            return {}
        return {
            "model": self.model.full_id,
            "context": f"{self.context_tokens():,} / {self.model.context_window:,} tokens",
            "tokens": f"{self.state.input_tokens:,} in, {self.state.output_tokens:,} out",
            "cost": f"${self.state.cost:.4f}",
            "compactions": self.state.compactions,
        }

    # -- internals --------------------------------------------------------------------------

    def record_entry(self, entry: BaseEntry) -> None:
        """Queue `entry` to the session file and fold it into the live state."""
        assert self.writer is not None and self.state is not None
        self.writer.add(entry)
        self.state.apply(entry)  # type: ignore[arg-type]
        self._dirty = True

    async def _ask(self, title: str, kind: ToolKind) -> bool | Refusal:
        call = self.agent.current_call if self.agent else None
        request = PermissionRequested(
            id=call.id if call else new_entry_id(), title=title, kind=kind
        )
        answer = await self.config.permission(request)
        allowed = allows(answer)
        said = answer.reason if isinstance(answer, Refusal) else None
        self._emit(replace(request, decision="allow" if allowed else "deny", reason=said))
        return answer if isinstance(answer, Refusal) else allowed

    def _emit(self, event: BaseEvent) -> None:
        if self._emit_to is not None:
            self._emit_to(event)
        else:
            self.config.outside_turn(event)

    def _notice(self, message: str, level: Literal["info", "warning"] = "info") -> None:
        self._emit(Notice(message=message, level=level))

    def _retry_notice(self, message: str) -> None:
        self._notice(message, "warning")
