"""Answering Claude Code's control requests: `can_use_tool` through avatar's scope and policy.

With `--permission-prompt-tool stdio` the CLI asks before every action its permission mode
does not pre-approve. The answer is decided in this order:

1. no open turn, or the turn is being cancelled: deny (nobody is there to want it);
2. config `scope` (`avatar.policy.claude_tools.check_tool_request`, rooted where claude runs,
   plus the `--add-dir` directories): a refusal is a deny whose reason the model reads;
3. the engine's permission handler (`BridgeContext.permission`: the REPL asks, `chat`
   applies `--permission`), unless the turn is cancelled while it is still deciding.

Every decision is also a `PermissionRequested` event in the turn, with the reason of a deny.
Any other control request gets an error answer (the CLI waits for one).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.bridges.claude.stream import (
    DENIED,
    TOOL_KINDS,
    control_error,
    control_response,
    permission_answer,
    tool_title,
)
from avatar.core.diffs import diffs_in
from avatar.core.errors import ProviderError
from avatar.core.events import PermissionRequested
from avatar.policy.permissions import allows, reason_of

if TYPE_CHECKING:
    from avatar.bridges.base import BridgeContext
    from avatar.bridges.claude.process import ClaudeProcess
    from avatar.bridges.turn import Turn
    from avatar.policy.scope import ScopePolicy

CANCELLED = "the turn was cancelled"
NO_TURN = "no turn is running"


class PermissionDesk:
    """Decides the CLI's permission questions for one bridge (see the module docstring)."""

    def __init__(self, ctx: BridgeContext) -> None:
        self.ctx = ctx
        self._scope: tuple[Path, ScopePolicy] | None = None  # (root, policy), built once

    async def answer(self, proc: ClaudeProcess, turn: Turn | None, msg: dict[str, Any]) -> None:
        """Answer one control request of `proc` that arrived during `turn`."""
        request_id = str(msg.get("request_id"))
        request = msg.get("request") or {}
        with contextlib.suppress(ProviderError):  # the process is gone: nobody to answer
            if request.get("subtype") != "can_use_tool":
                error = control_error(request_id, f"unsupported: {request.get('subtype')}")
                await proc.write(error)
                return
            name = str(request.get("tool_name") or "tool")
            tool_input = request.get("input")
            kind = TOOL_KINDS.get(name, "other")
            event = PermissionRequested(
                id=str(request.get("tool_use_id") or request_id),
                title=tool_title(name, tool_input, proc.cwd),
                kind=kind,
                diffs=diffs_in(tool_input) if kind == "edit" else [],  # the question shows them
            )
            allowed, reason = await self.decide(turn, proc.cwd, name, tool_input, event)
            event.decision, event.reason = ("allow" if allowed else "deny"), reason
            if turn is not None:
                turn.put(event)  # before the answer, so it precedes the tool's result
            verdict = permission_answer(allowed, tool_input, reason)
            await proc.write(control_response(request_id, verdict))

    async def decide(
        self,
        turn: Turn | None,
        cwd: Path,
        name: str,
        tool_input: Any,
        event: PermissionRequested,
    ) -> tuple[bool, str | None]:
        """(allowed, why not) for tool `name` called with `tool_input` by claude in `cwd`."""
        if turn is None:
            return False, NO_TURN
        if turn.cancelling:
            return False, CANCELLED
        refusal = self.scope_refusal(cwd, name, tool_input)
        if refusal is not None:
            return False, refusal
        ask = asyncio.ensure_future(self.ctx.permission(replace(event)))
        cancelled = asyncio.ensure_future(turn.cancel_requested.wait())
        try:
            await asyncio.wait({ask, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            cancelled.cancel()
            if not ask.done():  # the turn was cancelled first (or this task is)
                ask.cancel()
        if not ask.done() or ask.cancelled():
            return False, CANCELLED
        try:
            answer = ask.result()
        except Exception as e:  # a broken asker must not hang the agent
            return False, f"permission check failed: {e}"
        allowed = allows(answer)
        # The user's words, when they gave some, are the `message` the model reads.
        return allowed, None if allowed else reason_of(answer) or DENIED

    def scope_refusal(self, cwd: Path, name: str, tool_input: Any) -> str | None:
        """Why config `scope` refuses this tool call; None lets the permission policy decide.

        The project root is where claude runs (a resumed session's own directory), since
        claude's relative paths and its idea of the project are relative to it.
        """
        from avatar.policy.claude_tools import check_tool_request
        from avatar.policy.scope import ScopePolicy

        if self._scope is None or self._scope[0] != cwd:
            ctx = self.ctx
            self._scope = (cwd, ScopePolicy(ctx.settings.scope, cwd, ctx.additional_dirs))
        return check_tool_request(self._scope[1], name, tool_input)
