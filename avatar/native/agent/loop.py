"""The agent loop: stream the model, run its tool calls, feed the results back, repeat.

The loop owns no history. It asks its `AgentHooks` (the session) for the context before each
model call and reports every message back to them to be recorded — so what the model sees
live is exactly what a resume rebuilds from the session file. Steering text queued while a
turn runs is injected before the next model call; cancelling the task running `run()` stops
the stream or the tool at once, and `run()` records what was cut short before re-raising.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from avatar.core.errors import ProviderError
from avatar.core.events import (
    BaseEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
    UserMessage,
)
from avatar.native.llm.base import LLMClient
from avatar.native.llm.types import (
    ChatRequest,
    DonePart,
    Message,
    StopReason,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolCallPart,
    ToolSpec,
    UsagePart,
)
from avatar.native.tools.base import AgentTool, AgentToolResult, ToolContext

Emit = Callable[[BaseEvent], None]

INTERRUPTED_OUTPUT = "interrupted by the user before it finished"
FAILED_OUTPUT = "not run: the turn failed before this call could run"
MAX_REQUESTS_PER_TURN = 100
# Provider messages that mean "the prompt no longer fits" (OpenAI, Anthropic, vLLM, Ollama).
_OVERFLOW = re.compile(
    r"context.length|maximum context|prompt is too long|too many tokens|context window",
    re.IGNORECASE,
)


class AgentHooks(Protocol):
    """What the loop needs from its session."""

    def context(self) -> list[Message]:
        """The messages to send next (already compacted and repaired)."""
        ...

    def record_assistant(
        self,
        text: str,
        thinking: str,
        tool_calls: list[ToolCall],
        usage: UsagePart | None,
        stop_reason: str,
    ) -> None:
        """Persist an assistant message (and its tool calls)."""
        ...

    def record_tool_result(self, call: ToolCall, result: AgentToolResult) -> None:
        """Persist a tool result."""
        ...

    def record_steering(self, text: str) -> None:
        """Persist steering text as a user message."""
        ...

    def report_usage(self, emit: Emit) -> None:
        """Emit a `Usage` event after a model call."""
        ...

    async def before_request(self, emit: Emit) -> None:
        """Last chance to compact before a model call."""
        ...

    async def on_overflow(self, emit: Emit) -> bool:
        """The provider said the context is too long: compact; True to retry."""
        ...


@dataclass
class _Partial:
    """What a turn has produced that is not recorded yet (for an abort)."""

    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    streaming: bool = False
    unanswered: list[ToolCall] = field(default_factory=list)
    running: ToolCall | None = None


#: The kinds of tool plan mode keeps: those that change nothing.
PLAN_KINDS = frozenset({"read", "search"})
PLAN_NOTE = (
    "Plan mode is on: the user wants a plan, not changes. Read and search as needed, then"
    " answer with the plan; do not edit, write or run anything until plan mode is off."
)


class Agent:
    """Runs turns for one session: a client, a tool set, a system prompt, a steering queue."""

    def __init__(
        self,
        client: LLMClient,
        tools: Sequence[AgentTool],
        tool_context: ToolContext,
        system_prompt: str,
        hooks: AgentHooks,
        *,
        max_requests: int = MAX_REQUESTS_PER_TURN,
    ) -> None:
        self.client = client
        self.tools = {t.name: t for t in tools}
        self.tool_context = tool_context
        self.system_prompt = system_prompt
        self.hooks = hooks
        self.max_requests = max_requests
        self._steering: deque[str] = deque()
        self._steerable = False  # a turn runs and will read `steering` before it ends
        self._partial = _Partial()
        self.current_call: ToolCall | None = None
        #: Plan mode: only the tools that change nothing are offered (and run), and the
        #: model is told to plan instead of acting.
        self.plan = False

    def _offered(self) -> list[AgentTool]:
        tools = self.tools.values()
        return [t for t in tools if t.kind in PLAN_KINDS] if self.plan else list(tools)

    def tool_specs(self) -> list[ToolSpec]:
        """The tools as offered to the model."""
        return [ToolSpec(t.name, t.description, t.parameters()) for t in self._offered()]

    async def run(self, emit: Emit) -> StopReason | str:
        """Run model calls and tools until the model stops calling tools; returns why it stopped.

        On cancellation the partial answer and unanswered tool calls are recorded, then the
        `CancelledError` propagates.
        """
        self._partial = _Partial()
        requests = 0
        overflow_retried = False
        specs = self.tool_specs()
        self._steerable = True
        try:
            while True:
                self._inject_steering(emit)
                await self.hooks.before_request(emit)
                if requests >= self.max_requests:
                    return "max_turn_requests"
                requests += 1
                try:
                    calls, stop = await self._call_model(specs, emit)
                except ProviderError as e:
                    if overflow_retried or not _OVERFLOW.search(str(e)):
                        raise
                    overflow_retried = True
                    if not await self.hooks.on_overflow(emit):
                        raise
                    continue
                if not calls:
                    if self._steering:
                        continue  # the user typed something meanwhile: answer it too
                    return stop
                await self._run_tools(calls, emit)
        except asyncio.CancelledError:  # an abort: keep what was said, close open calls
            self._record_partial(emit, "cancelled", INTERRUPTED_OUTPUT)
            raise
        except BaseException:  # a failure: the log must stay whole for the next turn
            self._record_partial(emit, "error", FAILED_OUTPUT)
            raise
        finally:
            # Set with no await since `steering` was last read: later text is for a next turn.
            self._steerable = False

    def steer(self, text: str) -> bool:
        """Add `text` to the running turn, before its next model call; False when no turn
        runs or the running one has made its last call (the caller keeps it for the next)."""
        if self._steerable:
            self._steering.append(text)
        return self._steerable

    def _inject_steering(self, emit: Emit) -> None:
        while self._steering:
            text = self._steering.popleft()
            self.hooks.record_steering(text)
            emit(UserMessage(text=text))

    async def _call_model(
        self, specs: list[ToolSpec], emit: Emit
    ) -> tuple[list[ToolCall], StopReason]:
        system = f"{self.system_prompt}\n\n{PLAN_NOTE}" if self.plan else self.system_prompt
        request = ChatRequest(system=system, messages=self.hooks.context(), tools=specs)
        partial = self._partial
        partial.text, partial.thinking = [], []
        partial.streaming = True
        calls: list[ToolCall] = []
        usage: UsagePart | None = None
        stop: StopReason = "end_turn"
        async for part in self.client.stream(request):
            if isinstance(part, TextPart):
                partial.text.append(part.text)
                emit(TextDelta(text=part.text))
            elif isinstance(part, ThinkingPart):
                partial.thinking.append(part.text)
                emit(ThinkingDelta(text=part.text))
            elif isinstance(part, ToolCallPart):
                calls.append(part.call)
            elif isinstance(part, UsagePart):
                usage = part
            elif isinstance(part, DonePart):
                stop = part.stop_reason
        partial.streaming = False
        self.hooks.record_assistant(
            "".join(partial.text), "".join(partial.thinking), calls, usage, stop
        )
        partial.text, partial.thinking = [], []
        partial.unanswered = list(calls)
        self.hooks.report_usage(emit)
        return calls, stop

    async def _run_tools(self, calls: list[ToolCall], emit: Emit) -> None:
        partial = self._partial
        for call in calls:
            tool = self.tools.get(call.name)
            emit(
                ToolCallStarted(
                    id=call.id,
                    name=call.name,
                    title=tool.title(call.arguments) if tool else call.name,
                    kind=tool.kind if tool else None,
                    input=call.arguments,
                )
            )
            partial.running = call
            self.current_call = call
            try:
                result = await self._execute(tool, call)
            finally:
                self.current_call = None
            partial.running = None
            partial.unanswered.remove(call)
            self.hooks.record_tool_result(call, result)
            emit(ToolCallFinished(id=call.id, output=result.output, is_error=result.is_error))

    async def _execute(self, tool: AgentTool | None, call: ToolCall) -> AgentToolResult:
        if call.error:
            return AgentToolResult(f"{call.name}: {call.error}", True)
        if tool is not None and self.plan and tool.kind not in PLAN_KINDS:
            return AgentToolResult(f"{call.name}: not available in plan mode; {PLAN_NOTE}", True)
        if tool is None:
            known = ", ".join(t.name for t in self._offered())
            return AgentToolResult(f"unknown tool {call.name!r}; available: {known}", True)
        return await tool(call.arguments, self.tool_context)

    def _record_partial(self, emit: Emit, stop_reason: str, unanswered_output: str) -> None:
        """Make the session whole after an abort or a failure mid-turn."""
        partial = self._partial
        if partial.streaming:
            partial.streaming = False
            text = "".join(partial.text)
            if text or partial.thinking:
                self.hooks.record_assistant(text, "".join(partial.thinking), [], None, stop_reason)
        for call in partial.unanswered:
            result = AgentToolResult(unanswered_output, True)
            self.hooks.record_tool_result(call, result)
            if call is partial.running:
                emit(ToolCallFinished(id=call.id, output=result.output, is_error=True))
        partial.unanswered = []
        partial.running = None
        self._partial = _Partial()
