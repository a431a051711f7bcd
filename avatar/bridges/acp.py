"""`ACPBridge`: any Agent Client Protocol agent behind avatar's session API.

One generic bridge serves Gemini CLI (`gemini --acp`), codex-acp, claude-agent-acp and every
`transport: acp` entry in config; what differs between agents is data (`ProviderSpec`) and
quirks (`acp_quirks`). The pieces:

- `process`       the agent subprocess (explicit env, stderr drained, process-group shutdown)
- `acp_client`    the agent's callbacks (updates, permission, files, terminals)
- `acp_fs`, `acp_terminal`   file access and terminals, confined to the session's directories
- `acp_stream`    where updates go (the running turn, or the sink, marked replay on load)
- `acp_session`   the load → resume → new cascade, continue-last, fork (`ACPSessionMixin`)
- `acp_listing`   `session/list` pages, on-disk readers, the newest session
- `acp_updates`   ACP session updates → avatar events
- `mcp`           config `mcp_servers` → the MCP servers handed to the agent
- `acp_quirks`    what differs per agent (claude executable, Gemini's load bugs, late replay)

`import acp` costs ~0.65 s, so this module does not import it: `start()` spawns the agent
first and imports the SDK while the agent boots.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

from avatar.bridges.acp_fs import FileAccess
from avatar.bridges.acp_quirks import quirk_env, remove_companions
from avatar.bridges.acp_session import ACPSessionMixin, describe_error
from avatar.bridges.acp_stream import TurnSignal, UpdateRouter
from avatar.bridges.acp_terminal import TerminalManager
from avatar.bridges.acp_updates import prompt_usage, translate
from avatar.bridges.base import BaseBridge, BridgeContext, SessionCapabilities
from avatar.bridges.process import AgentProcess
from avatar.errors import ProviderError
from avatar.events import BaseEvent, Error, PermissionRequested, SessionStarted, TurnFinished
from avatar.providers import find_executable

if TYPE_CHECKING:
    from acp.core import ClientSideConnection

__all__ = ["ACPBridge", "ACPSessionMixin", "session_capabilities"]

T = TypeVar("T")

INIT_TIMEOUT = 60.0  # spawn → initialize answered (Gemini needs ~1.2 s, npx shims more)
REQUEST_TIMEOUT = 180.0  # session/new, load (a long history), list …
CANCEL_GRACE = 2.0  # after session/cancel, end the turn ourselves if the agent stays silent
STDERR_LINES_IN_ERRORS = 15


def session_capabilities(agent_capabilities: Any) -> SessionCapabilities:
    """DESIGN §2: every `agent_capabilities` field mapped into `SessionCapabilities`."""
    session = getattr(agent_capabilities, "session_capabilities", None)

    def has(name: str) -> bool:
        return session is not None and getattr(session, name, None) is not None

    can_load = bool(getattr(agent_capabilities, "load_session", False))
    can_list = has("list")
    can_resume = has("resume")
    return SessionCapabilities(
        can_list=can_list,
        can_load=can_load,
        can_resume=can_resume,
        can_continue_last=can_list and (can_load or can_resume),
        can_fork=has("fork"),
        can_delete=has("delete"),
        can_cancel=True,
    )


def _describe_tool(tool_call: Any) -> str:
    """A title for a permission request: the agent's title, else kind and input."""
    title = getattr(tool_call, "title", None)
    if title:
        return str(title)
    raw = getattr(tool_call, "raw_input", None)
    kind = getattr(tool_call, "kind", None) or "tool call"
    if isinstance(raw, dict):
        for key in ("command", "path", "file_path", "url"):
            if raw.get(key):
                return f"{kind}: {raw[key]}"
    return str(kind)


class ACPBridge(ACPSessionMixin, BaseBridge):
    """A bridge to one ACP agent process (see the module docstring)."""

    def __init__(self, ctx: BridgeContext) -> None:
        super().__init__(ctx)
        self.router = UpdateRouter(ctx.emit)
        self.process: AgentProcess | None = None
        self.conn: ClientSideConnection | None = None
        self.agent_capabilities: Any = None
        self.auth_methods: list[Any] = []
        self.agent_info: Any = None
        self.config_options: list[Any] = []
        self.terminals: TerminalManager | None = None
        self._mcp_cache: list[Any] | None = None
        self._watch: asyncio.Task[None] | None = None
        self._stopping = False
        self._turn_queue: asyncio.Queue[Any] | None = None
        self._turn_cancel: asyncio.Event | None = None
        self._cancel_timer: asyncio.TimerHandle | None = None
        self._calls_in_flight = 0
        self._background: set[asyncio.Future[Any]] = set()  # fire-and-forget, kept referenced

    # -- process ----------------------------------------------------------------------------

    def child_env(self) -> dict[str, str]:
        """The agent's environment: ctx.env (already merged with the spec's), plus quirks."""
        env = self._agent_env()
        env.update(quirk_env(self.ctx.spec, self.ctx.settings, env))
        return env

    def argv(self, env: dict[str, str]) -> list[str]:
        """The command to run, its program resolved (config path, PATH, bridges/)."""
        spec = self.ctx.spec
        if not spec.command:
            raise ProviderError(
                f"{self.name}: no command configured (set providers.{self.name}.command)"
            )
        program = spec.command[0]
        found = find_executable(program, path=env.get("PATH"))
        if found is None:
            hint = f"; install it: {spec.install_hint}" if spec.install_hint else ""
            raise ProviderError(
                f"{self.name}: {program} not found (looked in config, PATH and "
                f"bridges/node_modules/.bin){hint}"
            )
        return [found, *spec.command[1:]]

    @property
    def alive(self) -> bool:
        """True while the agent process runs and the connection is open."""
        return (
            self.process is not None and self.process.returncode is None and self.conn is not None
        )

    def stderr_tail(self, lines: int = STDERR_LINES_IN_ERRORS) -> str | None:
        """The agent's last stderr lines (for error messages)."""
        if self.process is None:
            return None
        return self.process.stderr.text(lines) or None

    async def start(self) -> None:
        """Spawn the agent, `initialize` it and read its capabilities."""
        if self.alive:
            return
        if self.process is not None or self.conn is not None:
            await self.stop()  # the remains of an agent that died
        self._stopping = False
        self._mcp_cache = None
        env = self.child_env()
        argv = self.argv(env)
        self.process = await AgentProcess.spawn(
            self.name, argv, env, self.ctx.cwd, self.ctx.spec.install_hint
        )
        # The agent boots in parallel with this import (~0.65 s of pydantic schema building).
        import acp
        from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

        from avatar import __version__
        from avatar.bridges.acp_client import AvatarClient

        files = FileAccess(self.ctx.cwd, self.ctx.additional_dirs, self.ctx.settings.scope)
        self.terminals = TerminalManager(files, env, self.ctx.settings.scope.shell_commands)
        client = AvatarClient(self._on_update, self._decide, files, self.terminals)
        stdin, stdout = self.process.process.stdin, self.process.process.stdout
        assert stdin is not None and stdout is not None
        self.conn = acp.connect_to_agent(client, stdin, stdout)
        self._watch = asyncio.get_running_loop().create_task(self._watch_exit(self.process))
        try:
            init = await self._call(
                "initialize",
                self.conn.initialize(
                    protocol_version=acp.PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(
                        fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                        terminal=True,
                    ),
                    client_info=Implementation(name="avatar", title="avatar", version=__version__),
                ),
                INIT_TIMEOUT,
            )
        except acp.RequestError as e:
            await self.stop()
            raise ProviderError(
                f"{self.name}: initialize failed: {describe_error(e)}", self.stderr_tail()
            ) from None
        except BaseException:
            await self.stop()
            raise
        self.agent_capabilities = init.agent_capabilities
        self.auth_methods = list(init.auth_methods or [])
        self.agent_info = init.agent_info
        self.capabilities = session_capabilities(init.agent_capabilities)

    async def stop(self) -> None:
        """Cancel any turn, kill terminals, close the connection and end the agent."""
        self._stopping = True
        self.router.cancel_settle()
        self.router.end_replay()
        if self._turn_queue is not None:
            self._turn_queue.put_nowait(TurnSignal("stopped"))
        if self.terminals is not None:
            with contextlib.suppress(Exception):
                await self.terminals.close()
        conn, self.conn = self.conn, None
        process = self.process
        if process is not None:
            # Closing stdin first lets the agent flush its session files before it exits.
            await process.stop()
        if "same_minute_load" in self.ctx.spec.quirks and self.session_id:
            remove_companions(self._agent_env(), self.session_id)
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None

    async def restart(self) -> SessionStarted | None:
        """Stop and start the agent, then reopen the current session (if any) by id."""
        session_id = self.session_id
        await self.stop()
        await self.start()
        if session_id is None:
            return None
        return await self.resume_session(session_id)

    async def _watch_exit(self, process: AgentProcess) -> None:
        await asyncio.shield(process.exited)
        if self._stopping or process is not self.process:
            return
        if self._turn_queue is not None:
            self._turn_queue.put_nowait(TurnSignal("died"))
            return
        if self._calls_in_flight:
            return  # the failing request reports it, with the same stderr tail
        await process.stderr_settled()
        self.ctx.emit(
            Error(
                message=f"{self.name} exited unexpectedly ({process.describe_exit()})",
                detail=self.stderr_tail(),
            )
        )

    async def _call(
        self, what: str, aw: Awaitable[T], timeout: float | None = REQUEST_TIMEOUT
    ) -> T:
        """Await one request; a dead or silent agent becomes a ProviderError with its stderr."""
        if self.conn is None:
            if asyncio.iscoroutine(aw):
                aw.close()
            raise ProviderError(f"{self.name} is not running")
        self._calls_in_flight += 1
        try:
            return await asyncio.wait_for(aw, timeout)
        except ConnectionError:
            await self._settle_death()
            status = self.process.describe_exit() if self.process else "not running"
            raise ProviderError(
                f"{self.name} exited during {what} ({status})", self.stderr_tail()
            ) from None
        except TimeoutError:
            raise ProviderError(
                f"{self.name} did not answer {what} within {timeout:g} s", self.stderr_tail()
            ) from None
        finally:
            self._calls_in_flight -= 1

    async def _settle_death(self) -> None:
        """Give a dying agent a moment to exit and flush stderr, for a useful error."""
        if self.process is None:
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.process.exited), 1.0)
        await self.process.stderr_settled(0.5)

    # -- callbacks --------------------------------------------------------------------------

    def _terminal_output(self, terminal_id: str) -> str | None:
        if self.terminals is None:
            return None
        try:
            return self.terminals.output(terminal_id)[0]
        except Exception:
            return None

    def _on_update(self, session_id: str, update: Any) -> None:
        # Synchronous on purpose: the SDK runs each notification as its own task, and routing
        # before any await keeps them in arrival order.
        if not self.wants_updates_of(session_id):
            return
        self.router.deliver(translate(update, self._terminal_output))

    async def _decide(self, session_id: str, tool_call: Any) -> bool | None:
        """Ask the permission policy; None when the turn is cancelled while asking."""
        event = PermissionRequested(
            id=str(tool_call.tool_call_id),
            title=_describe_tool(tool_call),
            kind=getattr(tool_call, "kind", None),
        )
        ask = asyncio.ensure_future(self.ctx.permission(event.model_copy()))
        waiters: set[asyncio.Future[Any]] = {ask}
        cancelled = self._turn_cancel
        cancel_wait = None
        if cancelled is not None:
            cancel_wait = asyncio.ensure_future(cancelled.wait())
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
            allowed = bool(ask.result())
            reason = None if allowed else "denied by the permission policy"
        except Exception as e:
            allowed, reason = False, f"permission check failed: {e}"
        event.decision = "allow" if allowed else "deny"
        event.reason = reason
        self.router.deliver([event])
        return allowed

    # -- turns ------------------------------------------------------------------------------

    async def send(self, prompt: str) -> AsyncIterator[BaseEvent]:
        """Run one turn: stream its events, end with TurnFinished (or Error)."""
        if not self.alive or self.session_id is None:
            status = "no session is open" if self.alive else "the agent is not running"
            yield Error(message=f"{self.name}: {status}", detail=self.stderr_tail())
            return
        # Never prompt while a load's history is still streaming in (see acp_stream).
        await self.router.replay_settled()
        from acp import text_block

        assert self.conn is not None
        queue = self.router.open_turn()
        self._turn_queue = queue
        self._turn_cancel = asyncio.Event()
        task = asyncio.ensure_future(
            self.conn.prompt(session_id=self.session_id, prompt=[text_block(prompt)])
        )
        task.add_done_callback(lambda t: queue.put_nowait(TurnSignal("done", t)))
        finished = False
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseEvent):
                    yield item
                    continue
                if item.kind == "done":
                    async for event in self._turn_result(item.payload):
                        yield event
                elif item.kind == "died":
                    yield await self._death_error()
                elif item.kind == "cancel_timeout":
                    yield TurnFinished(stop_reason="cancelled")
                else:  # stopped
                    yield TurnFinished(stop_reason="cancelled")
                finished = True
                return
        finally:
            self.router.close_turn()
            self._turn_queue = None
            if self._cancel_timer is not None:
                self._cancel_timer.cancel()
                self._cancel_timer = None
            if not task.done():
                task.cancel()
                if not finished and self.alive and self.conn is not None:
                    # The caller stopped listening mid-turn: stop the agent's work too.
                    bg = asyncio.ensure_future(self._quiet_cancel(self.session_id))
                    self._background.add(bg)
                    bg.add_done_callback(self._background.discard)
            self._turn_cancel = None

    async def _turn_result(self, task: asyncio.Future[Any]) -> AsyncIterator[BaseEvent]:
        cancelled = self._turn_cancel is not None and self._turn_cancel.is_set()
        if task.cancelled():
            yield TurnFinished(stop_reason="cancelled")
            return
        error = task.exception()
        if error is None:
            response = task.result()
            usage = prompt_usage(getattr(response, "usage", None))
            if usage is not None:
                yield usage
            reason = "cancelled" if cancelled else str(response.stop_reason)
            yield TurnFinished(stop_reason=reason)  # type: ignore[arg-type]
        elif isinstance(error, ConnectionError):
            yield await self._death_error()
        elif cancelled:
            yield TurnFinished(stop_reason="cancelled")
        else:
            yield Error(message=f"{self.name}: {describe_error(error)}", detail=self.stderr_tail())

    async def _death_error(self) -> Error:
        await self._settle_death()
        status = self.process.describe_exit() if self.process else "not running"
        return Error(
            message=f"{self.name} exited unexpectedly ({status})",
            detail=self.stderr_tail(),
        )

    async def _quiet_cancel(self, session_id: str | None) -> None:
        if self.conn is None or session_id is None:
            return
        with contextlib.suppress(Exception):
            await self.conn.cancel(session_id=session_id)

    async def cancel(self) -> None:
        """`session/cancel`; the turn ends `cancelled` within CANCEL_GRACE seconds regardless."""
        queue = self._turn_queue
        if queue is None:
            return
        if self._turn_cancel is not None:
            self._turn_cancel.set()  # pending permission requests answer "cancelled"
        await self._quiet_cancel(self.session_id)
        if self._cancel_timer is None:
            self._cancel_timer = asyncio.get_running_loop().call_later(
                CANCEL_GRACE, queue.put_nowait, TurnSignal("cancel_timeout")
            )

    def status(self) -> dict[str, Any]:
        """Agent name/version and pid for `/status`."""
        info: dict[str, Any] = {}
        if self.agent_info is not None:
            info["agent"] = f"{self.agent_info.name} {self.agent_info.version}"
        if self.process is not None:
            info["pid"] = self.process.pid
        return info
