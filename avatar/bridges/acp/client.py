"""The client side of ACP: avatar's answers when the agent calls, one set for every ACP session.

`AgentCalls` answers the agent's requests on the JSON it wrote: `session/request_permission`
(the scope, then the permission policy: `turns.Asker`), `fs/read_text_file` and
`fs/write_text_file` (inside the session's directories: `FileAccess`), and `terminal/*`
(commands inside the walls: `TerminalManager`). It takes the agent's notifications too: each
`session/update` of a session the bridge wants is translated (`wire.translate`) and routed
(`stream.UpdateRouter`) at once, so updates keep their order. A refusal is a JSON-RPC error
whose message the agent (and its model) can read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from avatar.bridges.acp.fs import AccessDenied
from avatar.bridges.acp.jsonrpc import METHOD_NOT_FOUND, RpcError
from avatar.bridges.acp.permission import get, pick_option
from avatar.bridges.acp.wire import translate

if TYPE_CHECKING:
    from avatar.bridges.acp.fs import FileAccess
    from avatar.bridges.acp.terminal import ExitStatus, TerminalManager
    from avatar.bridges.acp.turns import Asker

Wanted = Callable[[str | None], bool]
"""True for the updates of a session (by id; None when the update names none) the bridge
shows: the open one, or one being opened."""


def _exit_status(status: ExitStatus | None) -> dict[str, Any] | None:
    return None if status is None else {"exitCode": status.exit_code, "signal": status.signal}


class AgentCalls:
    """avatar's answers to one agent's requests and notifications (see the module docstring)."""

    def __init__(
        self, asker: Asker, files: FileAccess, terminals: TerminalManager, wanted: Wanted
    ) -> None:
        self.asker = asker
        self.files = files
        self.terminals = terminals
        self.wanted = wanted

    # -- notifications ----------------------------------------------------------------------

    def notification(self, method: str, params: dict[str, Any]) -> None:
        """A `session/update` of a wanted session, translated and routed before the next
        line of the agent is read; anything else is ignored."""
        update, session_id = params.get("update"), params.get("sessionId")
        if method != "session/update" or not isinstance(update, dict):
            return
        if not self.wanted(session_id if isinstance(session_id, str) else None):
            return  # a late update of a session left behind
        if update.get("sessionUpdate") in ("tool_call", "tool_call_update"):
            self.asker.calls.seen(update)
        self.asker.router.deliver(translate(update, self._terminal_text))

    def _terminal_text(self, terminal_id: str) -> str | None:
        """The output so far of a terminal a tool call shows (None when there is none)."""
        try:
            return self.terminals.output(terminal_id)[0]
        except Exception:
            return None

    # -- requests ---------------------------------------------------------------------------

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """The result of the agent's request `method`; a refusal is an `RpcError` the agent
        reads (a missing parameter one of invalid params, `jsonrpc.JsonRpc`)."""
        try:
            return await self._answer(method, params)
        except AccessDenied as e:
            message = str(e)
            raise RpcError(e.code, message, {"reason": message}) from None

    async def _answer(self, method: str, p: dict[str, Any]) -> Any:
        if method == "session/request_permission":
            allowed = await self.asker.decide(p.get("toolCall") or {})
            option = None if allowed is None else pick_option(p.get("options") or [], allowed)
            if option is None:  # cancelled turn, or no option of that kind offered
                return {"outcome": {"outcome": "cancelled"}}
            return {"outcome": {"outcome": "selected", "optionId": get(option, "optionId")}}
        if method == "fs/read_text_file":
            return {"content": self.files.read(p["path"], p.get("line"), p.get("limit"))}
        if method == "fs/write_text_file":
            self.files.write(p["path"], p["content"])
            return {}
        terminals = self.terminals
        if method == "terminal/create":
            env = {str(v.get("name")): str(v.get("value")) for v in p.get("env") or []}
            terminal_id = await terminals.create(
                p["command"], p.get("args"), env, p.get("cwd"), p.get("outputByteLimit")
            )
            return {"terminalId": terminal_id}
        terminal_id = str(p.get("terminalId"))
        if method == "terminal/output":
            text, truncated, status = terminals.output(terminal_id)
            done = {"exitStatus": _exit_status(status)} if status is not None else {}
            return {"output": text, "truncated": truncated, **done}
        if method == "terminal/wait_for_exit":
            return _exit_status(await terminals.wait(terminal_id))
        if method == "terminal/kill":
            await terminals.kill(terminal_id)
            return {}
        if method == "terminal/release":
            await terminals.release(terminal_id)
            return {}
        raise RpcError(METHOD_NOT_FOUND, f"method not found: {method}")
