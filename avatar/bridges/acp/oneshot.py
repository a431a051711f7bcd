"""`OneShotBridge`: one new session and its turns on an ACP agent, without the SDK.

`avatar -p codex chat hello` needs `initialize`, `session/new`, the agent's mode and model,
`session/prompt` with its updates and callbacks, and `session/cancel`. `import acp` costs
about a second, more than the agent takes to answer, so this bridge speaks those few methods
over the standard library's JSON (`avatar.bridges.acp.jsonrpc`) and the SDK never loads. What a
user sees is the full bridge's: the same agent setup and walls (`setup`), the same turn and
permission questions (`turns`), the same translation of updates (`wire`), the same scope for
files and terminals. The engine uses it only for a one-shot on a new session
(`ProviderSpec.one_shot_bridge`); everything else (reopening, listing, forking) is
`ACPBridge`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from avatar.bridges.acp.connection import (
    AUTH_REQUIRED,
    AgentConnection,
    auth_message,
    describe_error,
)
from avatar.bridges.acp.content import prompt_blocks, takes_images
from avatar.bridges.acp.fs import AccessDenied, FileAccess
from avatar.bridges.acp.jsonrpc import METHOD_NOT_FOUND, JsonRpc, RpcError
from avatar.bridges.acp.options import select_option
from avatar.bridges.acp.permission import get, pick_option
from avatar.bridges.acp.quirks import remove_companions
from avatar.bridges.acp.setup import AgentSetup, session_capabilities
from avatar.bridges.acp.stream import UpdateRouter
from avatar.bridges.acp.terminal import ExitStatus, TerminalManager
from avatar.bridges.acp.turns import Asker, cancel_turn, run_turn
from avatar.bridges.acp.wire import prompt_usage, translate
from avatar.bridges.base import BaseBridge, BridgeContext, OpenRequest, not_supported
from avatar.bridges.turn import TurnSignal
from avatar.core.errors import ProviderError
from avatar.core.events import BaseEvent, Error, Notice, SessionStarted, StopReason, Usage
from avatar.core.ids import is_valid_id
from avatar.core.prompts import Prompt
from avatar.core.tasks import BackgroundTasks
from avatar.core.version import __version__

#: The ACP protocol version avatar speaks (the SDK's `PROTOCOL_VERSION`).
PROTOCOL_VERSION = 1
CLIENT_CAPABILITIES = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
INVALID_PARAMS = -32602


def _refuse(refused: AccessDenied) -> RpcError:
    message = str(refused)
    return RpcError(refused.code, message, {"reason": message})


def _exit_status(status: ExitStatus | None) -> dict[str, Any] | None:
    return None if status is None else {"exitCode": status.exit_code, "signal": status.signal}


class OneShotBridge(BaseBridge):
    """A new session and its turns on one ACP agent, over `JsonRpc` (see the module docstring).

    Public seam: `agent` (the running `AgentConnection`, None when stopped).
    """

    def __init__(self, ctx: BridgeContext) -> None:
        super().__init__(ctx)
        self.router = UpdateRouter(ctx.emit, ctx.spec.name)
        self.asker = Asker(self.router, ctx.permission, ctx.spec.name)
        self.agent: AgentConnection[JsonRpc] | None = None
        self.config_options: list[Any] = []
        self._agent_caps: dict[str, Any] = {}
        self._auth_ids: list[str] = []
        self._setup: AgentSetup | None = None
        self._model: str | None = None
        self._in_background = BackgroundTasks()  # fire-and-forget, kept referenced

    @property
    def alive(self) -> bool:
        """True while the agent process runs and the connection is open."""
        return self.agent is not None and self.agent.alive

    async def start(self) -> None:
        """Spawn the agent (inside its walls) and `initialize` it."""
        if self.alive:
            return
        if self.agent is not None:
            await self.stop()
        setup = self._setup = AgentSetup.of(self.ctx)

        def connect(stdin: asyncio.StreamWriter, stdout: asyncio.StreamReader) -> JsonRpc:
            return JsonRpc(stdout, stdin, self._on_request, self._on_notification)

        self.agent = await AgentConnection.launch(
            self.name,
            setup.launch.argv,
            setup.launch.agent_env(),
            self.ctx.cwd,
            install_hint=self.ctx.spec.install_hint,
            connect=connect,
            hello=self._hello,
            on_exit=self._agent_exited,
            emit=self.ctx.emit,
            sandbox=setup.launch.walls,
            booting=self.ctx.booting,
            spawned=setup.spawned,
        )
        self.asker.policy = setup.files.policy
        self.capabilities = session_capabilities(self._agent_caps)

    async def _hello(self, agent: AgentConnection[JsonRpc]) -> None:
        client_info = {"name": "avatar", "title": "avatar", "version": __version__}
        init = await agent.conn.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": CLIENT_CAPABILITIES,
                "clientInfo": client_info,
            },
        )
        self._agent_caps = get(init, "agentCapabilities") or {}
        self._auth_ids = [str(get(m, "id")) for m in get(init, "authMethods") or []]
        session = get(self._agent_caps, "sessionCapabilities")
        agent.closes_sessions = get(session, "close") is not None if session else False

    async def stop(self) -> None:
        """Cancel any turn, kill terminals, close the connection and end the agent."""
        if self.router.turn is not None:
            self.router.turn.put(TurnSignal("stopped"))
        setup, agent, self.agent = self._setup, self.agent, None
        if setup is not None:
            with contextlib.suppress(Exception):
                await setup.terminals.close()
        if agent is not None:
            await agent.close(self.session_id)
            if "same_minute_load" in self.ctx.spec.quirks and self.session_id:
                remove_companions(agent.env, self.session_id)

    def _agent_exited(self) -> bool:
        turn = self.router.turn
        if turn is None:
            return False
        turn.put(TurnSignal("died"))
        return True

    def _running(self) -> AgentConnection[JsonRpc]:
        if self.agent is None:
            raise ProviderError(f"{self.name} is not running")
        if not self.agent.alive:
            raise self.agent.not_running()
        return self.agent

    async def _call(self, what: str, params: dict[str, Any]) -> Any:
        agent = self._running()
        return await agent.call(what, agent.conn.request(what, params))

    # -- the session ------------------------------------------------------------------------

    async def open(self, request: OpenRequest) -> SessionStarted:
        """`session/new`, then the agent's mode and the model asked for."""
        if request.mode != "new":
            raise not_supported(self.name, request.mode)
        params: dict[str, Any] = {"cwd": str(self.ctx.cwd.resolve()), "mcpServers": []}
        session_caps = get(self._agent_caps, "sessionCapabilities")
        if self.ctx.additional_dirs and get(session_caps, "additionalDirectories") is not None:
            params["additionalDirectories"] = [str(d.resolve()) for d in self.ctx.additional_dirs]
        if self.ctx.settings.mcp_servers:
            params["mcpServers"] = self._mcp_servers()
        if self._setup is not None and self._setup.launch.holding.meta:
            params["_meta"] = self._setup.launch.holding.meta
        try:
            resp = await self._call("session/new", params)
        except RpcError as e:
            if e.code == AUTH_REQUIRED:  # (no auth_method retry here: the full bridge has it)
                hint = self.ctx.spec.auth_hint
                raise ProviderError(auth_message(self.name, hint, self._auth_ids, e)) from None
            failed = f"{self.name}: session/new failed: {describe_error(e)}"
            raise self._running().failure(failed) from None
        session_id = str(get(resp, "sessionId"))
        if not is_valid_id(session_id):  # it names files and is printed: no paths
            raise ProviderError(f"{self.name}: the agent gave an invalid session id {session_id!r}")
        self.session_id, self.config_options = session_id, list(get(resp, "configOptions") or [])
        self.router.opened()
        if request.session_id and request.session_id != session_id:
            message = f"{self.name} chooses its own session ids; opened a new session {session_id}"
            self.ctx.emit(Notice(message=f"{message} instead", level="warning"))
        await self._apply_model()
        return SessionStarted(
            session_id=session_id,
            provider=self.name,
            how="new",
            model=self.model_in_use,
            cwd=str(self.ctx.cwd),
        )

    def _mcp_servers(self) -> list[Any]:
        # Config MCP servers are rare in a one-shot: built by the SDK's types, as the full
        # bridge builds them (this loads the SDK), then sent as their JSON.
        from acp.schema import McpCapabilities

        from avatar.bridges.mcp import build_mcp_servers

        caps = get(self._agent_caps, "mcpCapabilities")
        mcp_caps = McpCapabilities.model_validate(caps) if isinstance(caps, dict) else None
        servers, skipped = build_mcp_servers(self.ctx.settings.mcp_servers, mcp_caps)
        for message in skipped:
            self.ctx.emit(Notice(message=message, level="warning"))
        return [s.model_dump(mode="json", by_alias=True, exclude_none=True) for s in servers]

    @property
    def model_in_use(self) -> str | None:
        """The session's `model` option as the agent reported it, else the model asked for."""
        option = select_option(self.config_options, "model")
        if option is not None and get(option, "currentValue") is not None:
            return str(get(option, "currentValue"))
        return self._model or self.ctx.model or self.ctx.spec.model

    async def _apply_model(self) -> None:
        mode = self._setup.mode(self.ctx) if self._setup is not None else None
        if mode:
            problem = await self._set_option("mode", mode)
            if problem:
                self.ctx.emit(
                    Notice(
                        message=f"{self.name}: mode {mode!r} not set: {problem}", level="warning"
                    )
                )
        if self.ctx.model:
            problem = await self._set_option("model", self.ctx.model)
            if problem:
                message = f"model {self.ctx.model!r} not set: {problem}"
                self.ctx.emit(Notice(message=message, level="warning"))

    async def _set_option(self, category: str, value: str) -> str | None:
        """Set the session's `category` selector (as `options.set_option` does); the problem."""
        assert self.session_id is not None
        option = select_option(self.config_options, category)
        if option is None and category == "model":  # agents without a model option
            try:
                await self._call(
                    "session/set_model", {"sessionId": self.session_id, "modelId": value}
                )
            except RpcError as e:
                return f"{e} ({e.code})"
            self._model = value
            return None
        if option is None:
            return f"the agent has no {category} option"
        if get(option, "currentValue") == value:
            return None
        values = [get(o, "value") for o in get(option, "options") or []]
        if values and value not in values and category != "model":
            return f"the agent offers {', '.join(map(str, values))}"
        params = {"sessionId": self.session_id, "configId": get(option, "id"), "value": value}
        try:
            resp = await self._call("session/set_config_option", params)
        except RpcError as e:
            return f"{e} ({e.code})"
        self.config_options = list(get(resp, "configOptions") or self.config_options)
        return None

    async def set_model(self, model: str) -> None:
        """Switch model through the session's `model` option (or `session/set_model`)."""
        problem = await self._set_option("model", model)
        if problem:
            raise ProviderError(f"{self.name}: cannot switch to model {model!r}: {problem}")

    # -- turns ------------------------------------------------------------------------------

    @property
    def takes_images(self) -> bool:
        """The agent said at initialize that it takes images."""
        return takes_images(self._agent_caps)

    async def send(self, prompt: str | Prompt) -> AsyncIterator[BaseEvent]:
        """Run one turn: stream its events, end with TurnFinished (or Error)."""
        prompt = Prompt.of(prompt)
        agent, session_id = self.agent, self.session_id
        if agent is None or not agent.alive or session_id is None:
            gone = agent.not_running() if agent is not None else None
            yield Error(message=str(gone or f"{self.name}: no session is open"))
            return
        conn = agent.conn
        blocks = prompt_blocks(prompt.with_text(self.asker.with_refusals(prompt.text)))

        async def ask() -> tuple[StopReason, Usage | None]:
            resp = await conn.request("session/prompt", {"sessionId": session_id, "prompt": blocks})
            return get(resp, "stopReason") or "end_turn", prompt_usage(
                get(resp, "usage"), get(resp, "_meta")
            )

        async for event in run_turn(
            self.name, agent, self.router, session_id, ask, self._in_background
        ):
            yield event

    async def cancel(self) -> None:
        """`session/cancel`; the turn ends `cancelled` within CANCEL_GRACE seconds regardless."""
        await cancel_turn(self.router, self.agent, self.session_id)

    # -- the agent's calls ------------------------------------------------------------------

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        # Synchronous: routed before the next line is read, so arrival order is kept.
        update = params.get("update")
        if method != "session/update" or not isinstance(update, dict):
            return
        if params.get("sessionId") not in (None, self.session_id) and self.session_id:
            return  # a late update of another session
        if update.get("sessionUpdate") in ("tool_call", "tool_call_update"):
            self.asker.calls.seen(update)
        self.router.deliver(translate(update, self._terminal_text))

    def _terminal_text(self, terminal_id: str) -> str | None:
        try:
            return self._terminals().output(terminal_id)[0]
        except Exception:
            return None

    def _files(self) -> FileAccess:
        assert self._setup is not None
        return self._setup.files

    def _terminals(self) -> TerminalManager:
        assert self._setup is not None
        return self._setup.terminals

    async def _on_request(self, method: str, params: dict[str, Any]) -> Any:
        """Answer the agent as `AvatarClient` does; a refusal is an error the agent reads."""
        try:
            return await self._answer(method, params)
        except AccessDenied as e:
            raise _refuse(e) from None

    async def _answer(self, method: str, p: dict[str, Any]) -> Any:
        if method == "session/request_permission":
            allowed = await self.asker.decide(p.get("toolCall") or {})
            option = None if allowed is None else pick_option(p.get("options") or [], allowed)
            if option is None:  # cancelled turn, or no option of that kind offered
                return {"outcome": {"outcome": "cancelled"}}
            return {"outcome": {"outcome": "selected", "optionId": get(option, "optionId")}}
        if method == "fs/read_text_file":
            return {"content": self._files().read(p["path"], p.get("line"), p.get("limit"))}
        if method == "fs/write_text_file":
            self._files().write(p["path"], p["content"])
            return {}
        terminals = self._terminals()
        if method == "terminal/create":
            env = {str(v.get("name")): str(v.get("value")) for v in p.get("env") or []}
            args = p.get("args")
            terminal_id = await terminals.create(
                p["command"], args, env, p.get("cwd"), p.get("outputByteLimit")
            )
            return {"terminalId": terminal_id}
        terminal_id = str(p.get("terminalId"))
        if method == "terminal/output":
            text, truncated, status = terminals.output(terminal_id)
            return {"output": text, "truncated": truncated, "exitStatus": _exit_status(status)}
        if method == "terminal/wait_for_exit":
            return _exit_status(await terminals.wait(terminal_id))
        if method == "terminal/kill":
            await terminals.kill(terminal_id)
            return {}
        if method == "terminal/release":
            await terminals.release(terminal_id)
            return {}
        raise RpcError(METHOD_NOT_FOUND, f"method not found: {method}")
