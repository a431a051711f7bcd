"""A turn on an ACP agent: its events until it ends, its cancel, and the permission questions
the agent asks meanwhile (`Asker`: the scope, then the permission policy).

How the prompt goes out and how its answer is read is the caller's (`Prompt`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import replace
from typing import Any

from avatar.bridges.acp.connection import AgentConnection, describe_error
from avatar.bridges.acp.permission import ToolCalls, get, scope_refusal
from avatar.bridges.acp.stream import UpdateRouter
from avatar.bridges.acp.wire import tool_diffs
from avatar.bridges.turn import Turn, TurnSignal
from avatar.core.events import (
    BaseEvent,
    Error,
    Notice,
    PermissionRequested,
    StopReason,
    TurnFinished,
    Usage,
)
from avatar.policy.permissions import PermissionHandler, Refusal, allows
from avatar.policy.scope import ScopePolicy
from avatar.sessions.handoff_marker import note

CANCEL_GRACE = 2.0  # after session/cancel, end the turn ourselves if the agent stays silent

Prompt = Callable[[], Awaitable[tuple[StopReason, Usage | None]]]
"""Sends `session/prompt`; its stop reason and the turn's token counts, once it is answered."""
Background = Callable[[Coroutine[Any, Any, None]], None]
"""Runs work nobody waits for (and keeps it referenced)."""


async def run_turn(
    name: str,
    agent: AgentConnection,
    router: UpdateRouter,
    session_id: str,
    prompt: Prompt,
    background: Background,
) -> AsyncIterator[BaseEvent]:
    """Run one turn: stream its events, end with TurnFinished (or Error). The prompt goes
    once the agent is quiet (no replay streaming in, nothing said just after an open)."""
    await router.replay_settled()
    turn = router.open_turn()
    task = asyncio.ensure_future(prompt())
    task.add_done_callback(lambda t: turn.put(TurnSignal("done", t)))
    ended = False
    try:
        while True:
            item = await turn.events.get()
            if isinstance(item, BaseEvent):
                yield item
                continue
            async for event in _ending(name, item, agent, turn):
                yield event
            ended = True
            return
    finally:
        # The caller stopped listening mid-turn: stop the agent's work too.
        abandoned = not (ended or task.done())
        router.close_turn(turn, abandoned=abandoned)
        if not task.done():
            task.cancel()
        if abandoned:
            background(agent.notify_cancel(session_id))


async def _ending(
    name: str, signal: TurnSignal, agent: AgentConnection, turn: Turn
) -> AsyncIterator[BaseEvent]:
    """The last events of a turn, for the signal that ended it."""
    if signal.kind == "died":
        yield await agent.death_error()
        return
    if signal.kind != "done":  # cancel_timeout, stopped
        yield TurnFinished(stop_reason="cancelled")
        return
    task: asyncio.Future[tuple[StopReason, Usage | None]] = signal.payload
    if task.cancelled():
        yield TurnFinished(stop_reason="cancelled")
        return
    error = task.exception()
    if error is None:
        stop_reason, usage = task.result()
        if usage is not None:
            yield usage
        yield TurnFinished(stop_reason="cancelled" if turn.cancelling else stop_reason)
    elif isinstance(error, ConnectionError):
        yield await agent.death_error()
    elif turn.cancelling:
        yield TurnFinished(stop_reason="cancelled")
    else:
        message = agent.explain(f"{name}: {describe_error(error)}")
        yield Error(message=message, detail=agent.stderr_tail())


async def cancel_turn(
    router: UpdateRouter, agent: AgentConnection | None, session_id: str | None
) -> None:
    """`session/cancel`; the turn ends `cancelled` within CANCEL_GRACE seconds regardless."""
    turn = router.turn
    if turn is None:
        return
    first = turn.request_cancel()  # pending permission requests answer "cancelled"
    if agent is not None and session_id is not None:
        await agent.notify_cancel(session_id)
    if first:
        # A late timer only reaches a finished turn, which drops it.
        loop = asyncio.get_running_loop()
        loop.call_later(CANCEL_GRACE, turn.put, TurnSignal("cancel_timeout"))


def describe_tool(tool_call: Any) -> str:
    """A title for a permission request's tool call (as the agent wrote it): the agent's
    title, else kind and input."""
    title = get(tool_call, "title")
    if title:
        return str(title)
    raw = get(tool_call, "raw_input", "rawInput")
    kind = str(get(tool_call, "kind") or "tool call")
    if isinstance(raw, dict):
        for key in ("command", "path", "file_path", "url"):
            if raw.get(key):
                return f"{kind}: {raw[key]}"
    return kind


class Asker:
    """Answers an agent's permission requests: the scope first, then the permission policy.

    `calls` remembers what announced tool calls touch (feed it every tool call update);
    `policy` is the scope the agent is held to (None: nothing to check yet). ACP's answer to a
    permission request is an option and carries no words, so a refusal's reason waits here
    and goes with the next prompt (`with_refusals`), as one of avatar's notes: the agent reads
    it, and the user's turn read back (a recap, a handoff, a title) leaves it out.
    """

    def __init__(
        self, router: UpdateRouter, permission: PermissionHandler, agent: str = "the agent"
    ) -> None:
        self.router = router
        self.permission = permission
        self.agent = agent  #: who asks, for the refusal's one line
        self.calls = ToolCalls()
        self.policy: ScopePolicy | None = None
        self.refusals: list[str] = []  # what the user said when refusing, not yet sent

    def with_refusals(self, prompt: str) -> str:
        """`prompt`, after what the user said when refusing since the last prompt."""
        said, self.refusals = self.refusals, []
        return "".join([*said, "\n", prompt]) if said else prompt

    async def decide(self, tool_call: Any) -> bool | None:
        """Check the scope, then ask the permission policy; None when the turn is cancelled
        while asking. A request the scope refuses is denied whatever the policy says."""
        facts = self.calls.facts(tool_call)
        call_id = str(get(tool_call, "tool_call_id", "toolCallId"))
        event = PermissionRequested(
            id=call_id,
            title=describe_tool(tool_call),
            kind=facts.kind,
            diffs=tool_diffs(tool_call) if isinstance(tool_call, dict) else [],
        )
        refused = scope_refusal(self.policy, facts) if self.policy is not None else None
        if refused is not None:
            event.decision, event.reason = "deny", refused
            said = f"denied {self.agent}'s request {event.title!r}: {refused}"
            notice = Notice(message=said, level="warning")
            self.router.deliver([event, notice])
            return False
        ask = asyncio.ensure_future(self.permission(replace(event)))
        waiters: set[asyncio.Future[Any]] = {ask}
        turn = self.router.turn
        cancel_wait = None
        if turn is not None:
            cancel_wait = asyncio.ensure_future(turn.cancel_requested.wait())
            waiters.add(cancel_wait)
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if cancel_wait is not None:
                cancel_wait.cancel()
        if not ask.done():
            ask.cancel()
            return None
        try:
            answer = ask.result()
            allowed = allows(answer)
            reason = None if allowed else "denied by the permission policy"
            if isinstance(answer, Refusal):
                reason = answer.reason
                said = f"I refused {event.title!r} and said: {answer.reason}"
                self.refusals.append(note("avatar_refusal", said))
        except Exception as e:
            allowed, reason = False, f"permission check failed: {e}"
        event.decision = "allow" if allowed else "deny"
        event.reason = reason
        self.router.deliver([event])
        return allowed
