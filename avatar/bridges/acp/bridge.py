"""`ACPBridge`: any Agent Client Protocol agent behind avatar's session API.

One generic bridge serves Gemini CLI (`gemini --acp`), codex-acp, claude-agent-acp and every
`transport: acp` entry in config, for every use: a one-shot `chat`, the REPL, reopening,
listing, forking, deleting. What differs between agents is data (`ProviderSpec`) and quirks
(`quirks`). The bridge composes:

- `connection`  the agent process and the JSON-RPC connection on its stdio (`jsonrpc`, the
                standard library's: docs/design.md §2 says why not the ACP SDK's): launch,
                `request()` with timeouts and death handling, stderr tail (`AgentConnection`)
- `session`     the load → resume → new cascade, continue-last, fork (`SessionOpener`, which
                returns an `OpenResult`; the bridge reports fallbacks in one place)
- `stream`      where updates go: the running `Turn`, or the sink (marked replay on load)
- `client`      the agent's calls (updates, permission, files, terminals: `AgentCalls`)
- `shared`      the agent, maybe shared with other bridges' sessions (`SharedAgent`), whose
                calls go each to the bridge of the session they name
- `fs`, `terminal`   file access and terminals, confined to the session's directories
- `turns`       a turn's events and end, its cancel, the permission questions asked during it
- `wire`        ACP session updates → avatar events
- `listing`     `session/list` pages, else the engine's store: the newest session
- `options`, `plan`   the session's model and mode (`session/set_config_option`)
- `mcp`         config `mcp_servers` → the MCP servers handed to the agent
- `quirks`      what differs per agent (claude executable, Gemini's load bugs, late replay)
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from avatar.bridges.acp import own_cli
from avatar.bridges.acp.client import AgentCalls
from avatar.bridges.acp.connection import AgentConnection
from avatar.bridges.acp.content import prompt_blocks, takes_images
from avatar.bridges.acp.jsonrpc import RpcError, fields
from avatar.bridges.acp.listing import list_pages
from avatar.bridges.acp.options import (
    current_choice,
    select_option,
    set_model_unstable,
    set_option,
)
from avatar.bridges.acp.permission import get
from avatar.bridges.acp.plan import PlanMode
from avatar.bridges.acp.quirks import SameMinuteWait, remove_companions, remove_unused
from avatar.bridges.acp.session import OpenResult, SessionOpener
from avatar.bridges.acp.setup import AgentSetup, session_capabilities
from avatar.bridges.acp.shared import SharedAgent, run_on
from avatar.bridges.acp.stream import UpdateRouter
from avatar.bridges.acp.terminal import TerminalManager
from avatar.bridges.acp.turns import Asker, cancel_turn, run_turn
from avatar.bridges.acp.wire import prompt_answer
from avatar.bridges.base import BaseBridge, BridgeContext, OpenRequest
from avatar.bridges.turn import TurnSignal
from avatar.core.errors import NotSupportedError, ProviderError
from avatar.core.events import (
    BaseEvent,
    Error,
    Notice,
    SessionStarted,
    StopReason,
    Usage,
)
from avatar.core.ids import is_valid_id
from avatar.core.prompts import Prompt
from avatar.core.tasks import BackgroundTasks
from avatar.sessions.types import SessionInfo

__all__ = ["ACPBridge", "session_capabilities"]


class ACPBridge(BaseBridge):
    """A bridge to one ACP agent process (see the module docstring).

    Public seams: `agent` (the running `AgentConnection`, None when stopped) and
    `same_minute` (how Gemini's same-minute load bug is waited out; tests shorten it).
    """

    def __init__(self, ctx: BridgeContext) -> None:
        super().__init__(ctx)
        self.router = UpdateRouter(ctx.emit, ctx.spec.name)
        self.same_minute = SameMinuteWait()
        self.agent: AgentConnection | None = None
        self.config_options: list[Any] = []
        self._plan = PlanMode()
        self._reported_model: str | None = None  # what the agent said it runs, at the open
        self._opener: SessionOpener | None = None
        self._spare: OpenResult | None = None  # a new session opened ahead (`warm_up`)
        self._shared: SharedAgent | None = None  # the agent it runs on, maybe with others
        self._calls: AgentCalls | None = None  # its answers to the agent's calls
        self._terminals: TerminalManager | None = None
        self._setup: AgentSetup | None = None  # what the agent was started with
        #: Permission requests: the scope the agent is held to, then the policy.
        self.asker = Asker(self.router, ctx.permission, ctx.spec.name)
        self._model: str | None = None  # set through session/set_model (no option to read)
        self._in_background = BackgroundTasks()  # fire-and-forget, kept referenced

    def notice(self, message: str, level: str = "info") -> None:
        """Tell the user something through the event sink."""
        self.ctx.emit(Notice(message=message, level="warning" if level == "warning" else "info"))

    # -- the agent --------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        """True while the agent process runs and the connection is open."""
        return self.agent is not None and self.agent.alive

    async def start(self) -> None:
        """Spawn the agent, `initialize` it and read its capabilities; or, given a pool that
        runs an agent started as this one would be, run on that one (`acp_shared`)."""
        if self.alive:
            return
        if self.agent is not None:
            await self.stop()  # the remains of an agent that died
        ctx = self.ctx
        setup = AgentSetup.of(ctx)
        self._setup = setup
        calls = AgentCalls(self.asker, setup.files, setup.terminals, self._wanted)

        async def launch(shared: SharedAgent) -> AgentConnection:
            return await AgentConnection.launch(
                self.name,
                setup.launch.argv,
                setup.launch.agent_env(),
                ctx.cwd,
                install_hint=ctx.spec.install_hint,
                on_request=shared.routes.request,
                on_notification=shared.routes.notification,
                on_exit=shared.exited,
                emit=shared.emit,
                sandbox=setup.launch.walls,
                booting=self.ctx.booting,
                spawned=setup.spawned,
            )

        shared = await run_on(ctx.pool, setup.launch, self, launch)
        agent = shared.agent
        assert agent is not None
        self._shared, self._calls = shared, calls
        self.agent, self._terminals, self.asker.policy = agent, setup.terminals, setup.files.policy
        self.session_id, self.config_options = None, []
        self.capabilities = session_capabilities(agent.agent_capabilities)
        self._opener = SessionOpener(
            ctx,
            agent,
            self.capabilities,
            self.router,
            self.same_minute,
            self.notice,
            setup.launch.holding.meta,
        )

    async def stop(self) -> None:
        """Cancel any turn, kill terminals, leave the agent: its sessions closed, and the agent
        ended with the last bridge on it."""
        self.router.end_replay()
        if self.router.turn is not None:
            self.router.turn.put(TurnSignal("stopped"))
        terminals, self._terminals = self._terminals, None
        if terminals is not None:
            with contextlib.suppress(Exception):
                await terminals.close()
        agent, self.agent, self._opener = self.agent, None, None
        spare, self._spare = self._spare, None
        shared, self._shared = self._shared, None
        if agent is None or shared is None:
            return
        sessions = [s for s in (self.session_id, spare and spare.session_id) if s]
        await shared.leave(self, self._calls, sessions)
        quirks = self.ctx.spec.quirks
        if "same_minute_load" in quirks and self.session_id:
            remove_companions(agent.env, self.session_id)
        if "empty_session_files" in quirks and spare is not None:
            remove_unused(agent.env, spare.session_id)

    def agent_exited(self) -> bool:
        """The agent ended on its own: the running turn, if any, ends with the news."""
        turn = self.router.turn
        if turn is None:
            return False
        turn.put(TurnSignal("died"))
        return True

    def said(self, event: BaseEvent) -> None:
        """What the agent's connection says outside a turn (its death): to the engine."""
        self.ctx.emit(event)

    def _alive(self) -> tuple[AgentConnection, SessionOpener]:
        """The agent and its opener; a ProviderError saying how it went when it is gone."""
        if self.agent is None or self._opener is None:
            raise ProviderError(f"{self.name} is not running")
        if not self.agent.alive:
            raise self.agent.not_running()
        return self.agent, self._opener

    def _wanted(self, session_id: str | None) -> bool:
        """The updates of the open session, or of one being opened (`AgentCalls`)."""
        opener = self._opener
        return opener is None or session_id is None or opener.wants_updates_of(session_id)

    # -- sessions ---------------------------------------------------------------------------

    async def warm_up(self) -> None:
        """Open the next new session ahead, on an agent that writes nothing of a session
        before its first prompt (quirk `lazy_session_files`, codex), or only a file without
        messages that listings hide (`empty_session_files`, Gemini): the next `open()` of a
        new session takes it instead of waiting for `session/new` (40–240 ms on codex-acp)
        and for the agent to go quiet after it. Unused, it leaves nothing behind: no file of
        the agent's (Gemini's is removed), no record of avatar's."""
        ahead = {"lazy_session_files", "empty_session_files"} & self.ctx.spec.quirks
        if ahead and self._spare is None:
            _, opener = self._alive()
            async with self._opening() as opened:
                self._spare = opened(await opener.new())

    async def open(self, request: OpenRequest) -> SessionStarted:
        """Open a session as `request` asks (docs/design.md §2 cascade); a fallback is reported
        here, in one Notice saying what failed and what was opened instead."""
        await self._restart_if_config_changed()
        _, opener = self._alive()
        spare, self._spare = self._spare, None
        if spare is not None and request.mode == "new" and not request.session_id:
            result = spare  # (opened by `warm_up`, never used)
        else:
            async with self._opening() as opened:
                result = opened(await opener.open(request))
        if not is_valid_id(result.session_id):  # it names files and is printed: no paths
            raise ProviderError(
                f"{self.name}: the agent gave an invalid session id {result.session_id!r}"
            )
        self.session_id, self.config_options = result.session_id, result.config_options
        self._reported_model = result.offered.model
        self._plan.opened(result.offered.modes)
        fallback = result.fallback_notice()
        if fallback is not None:
            self.notice(*fallback)
        await self._apply_model()
        return SessionStarted(
            session_id=result.session_id,
            provider=self.name,
            how=result.how,
            model=self.model_in_use,
            cwd=str(self.ctx.cwd),
        )

    @contextlib.asynccontextmanager
    async def _opening(self) -> AsyncIterator[Callable[[OpenResult], OpenResult]]:
        """While a session is opened: the agent's calls about it come here (sessions on a
        shared agent open one at a time); call what it yields with the result."""
        shared, calls = self._shared, self._calls
        if shared is None or calls is None:
            raise ProviderError(f"{self.name} is not running")

        def opened(result: OpenResult) -> OpenResult:
            shared.opened_for(result.session_id, calls)
            return result

        async with shared.opening(calls):
            yield opened

    async def _restart_if_config_changed(self) -> None:
        # The agent reads its project config at each session it opens, but what it holds back
        # was decided when it started: one started before a file of that config appeared or
        # changed (a REPL's /new after the model wrote .claude/settings.json, the server's warm
        # agent) starts again, without it.
        setup = self._setup
        if setup is None or setup.launch.holding.holds_back(self.ctx.holding(self.ctx.cwd)):
            return
        await self.stop()
        await self.start()

    async def agent_sessions(self) -> list[SessionInfo] | None:
        """`session/list` for the cwd, every page, where the agent advertises it."""
        if not self.capabilities.can_list:
            return None
        _, opener = self._alive()
        return await list_pages(opener.list_page, self.name)

    async def delete_session(self, session_id: str) -> bool:
        """`session/delete` where advertised; the agent's refusal is a `ProviderError` in its
        words."""
        if not self.capabilities.can_delete:
            return False
        agent, _ = self._alive()
        try:
            await agent.request("session/delete", {"sessionId": session_id})
        except RpcError as e:
            raise ProviderError(f"{self.name} did not delete session {session_id}: {e}") from None
        return True

    async def delete_offline(self, info: SessionInfo) -> bool:
        """Gemini CLI's own `--delete-session` (the `cli_delete` quirk: `own_cli`)."""
        if own_cli.CLI_DELETE not in self.ctx.spec.quirks:
            return False
        await own_cli.delete_with_cli(self.ctx, info)
        return True

    # -- model and mode (config options) -----------------------------------------------------

    @property
    def model_in_use(self) -> str | None:
        """The session's `model` config option as the agent last reported it, else the model
        avatar set, else the one the agent said it runs when the session opened, else the one
        asked for."""
        option = select_option(self.config_options, "model")
        if option is not None and get(option, "currentValue") is not None:
            return str(get(option, "currentValue"))
        return self._model or self._reported_model or self.ctx.model or self.ctx.spec.model

    @property
    def model_label(self) -> str | None:
        """The model option's value as the agent explains it ("default (Opus 4.5)")."""
        option = select_option(self.config_options, "model")
        chosen = current_choice(option) if option is not None else None
        return chosen or self.model_in_use

    async def _apply_model(self) -> None:
        mode = self._setup.mode(self.ctx) if self._setup is not None else None
        if mode and self.agent is not None and self.session_id is not None:
            self.config_options, problem = await set_option(
                self.agent, self.session_id, self.config_options, "mode", mode
            )
            if problem:
                self.notice(f"{self.name}: mode {mode!r} not set: {problem}", "warning")
        if self.ctx.model:
            try:
                await self.set_model(self.ctx.model)
            except (ProviderError, NotSupportedError) as e:
                self.notice(f"model {self.ctx.model!r} not set: {e}", "warning")

    @property
    def can_plan(self) -> bool:
        """The agent offers `plan` among its session's modes (claude-acp, Gemini)."""
        return self._plan.offered(self.config_options)

    async def set_plan(self, on: bool) -> None:
        """The session's mode to `plan`, or back to the mode it had before."""
        if self.agent is None or self.session_id is None:
            raise ProviderError(f"{self.name}: no session open")
        usual = self._setup.mode(self.ctx) if self._setup is not None else None
        self.config_options = await self._plan.set(
            on, self.agent, self.session_id, self.config_options, usual
        )

    async def set_model(self, model: str) -> None:
        """Switch model through the session's `model` config option (or `session/set_model`)."""
        if self.agent is None or self.session_id is None:
            raise ProviderError(f"{self.name}: no session open")
        if select_option(self.config_options, "model") is None:
            # Agents without a model option still take the unstable session/set_model.
            await set_model_unstable(self.agent, self.session_id, model)
            self._model = model
            return
        self.config_options, problem = await set_option(
            self.agent, self.session_id, self.config_options, "model", model
        )
        if problem:
            raise ProviderError(f"{self.name}: cannot switch to model {model!r}: {problem}")

    # -- turns ------------------------------------------------------------------------------

    @property
    def takes_images(self) -> bool:
        """The agent said at initialize that it takes images."""
        return self.agent is not None and takes_images(self.agent.agent_capabilities)

    async def send(self, prompt: str | Prompt) -> AsyncIterator[BaseEvent]:
        """Run one turn: stream its events, end with TurnFinished (or Error)."""
        prompt = Prompt.of(prompt)
        agent, session_id = self.agent, self.session_id
        if agent is None or not agent.alive or session_id is None:
            if agent is not None and not agent.alive:
                gone = agent.not_running()  # a death the watcher has not reported yet
                yield Error(message=str(gone), detail=gone.stderr_tail)
            else:
                status = "the agent is not running" if agent is None else "no session is open"
                yield Error(message=f"{self.name}: {status}")
            return
        # Never prompt while a load's history is still streaming in (see `stream`).
        await self.router.replay_settled()
        conn = agent.conn
        blocks = prompt_blocks(prompt.with_text(self.asker.with_refusals(prompt.text)))

        async def ask() -> tuple[StopReason, Usage | None]:
            method, params = "session/prompt", {"sessionId": session_id, "prompt": blocks}
            return prompt_answer(fields(await conn.request(method, params), method))

        async for event in run_turn(
            self.name, agent, self.router, session_id, ask, self._in_background
        ):
            yield event

    async def cancel(self) -> None:
        """`session/cancel`; the turn ends `cancelled` within CANCEL_GRACE seconds regardless."""
        await cancel_turn(self.router, self.agent, self.session_id)

    def status(self) -> dict[str, Any]:
        """Agent name/version and pid for `/status`."""
        info: dict[str, Any] = {}
        if self.agent is not None:
            agent_info = self.agent.agent_info
            if agent_info is not None:
                info["agent"] = f"{agent_info.get('name')} {agent_info.get('version')}"
            info["pid"] = self.agent.process.pid
        return info
