"""One running ACP agent: its process, the JSON-RPC connection on its stdio
(`avatar.bridges.acp.jsonrpc`), and how requests fail.

`AgentConnection.launch()` spawns the agent, connects to it and `initialize`s it. Every request
then goes through `call()` (`request()` sends one and calls it), which turns a dead agent or a
silent one into a `ProviderError` carrying the agent's last stderr lines. An agent that dies
between requests is reported through `on_exit` (the running turn takes it) or, when nobody is
waiting on it, as one `Error` event.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from avatar.bridges.acp.guard import StdoutSeen, guard_stdout
from avatar.bridges.acp.jsonrpc import (
    JsonRpc,
    NotificationHandler,
    RequestHandler,
    RpcError,
    WrongAnswer,
    fields,
)
from avatar.bridges.process import AgentProcess
from avatar.bridges.walled_out import explained
from avatar.core.errors import ProviderError
from avatar.core.events import BaseEvent, Error, Notice
from avatar.core.version import __version__

if TYPE_CHECKING:
    from avatar.bridges.spawning import Spawned
    from avatar.policy.sandbox import Sandbox

T = TypeVar("T")

#: The ACP protocol version avatar speaks.
PROTOCOL_VERSION = 1
#: What avatar offers an agent at `initialize`: its files (confined to the session's
#: directories) and terminals (real processes inside the walls).
CLIENT_CAPABILITIES = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}

INIT_TIMEOUT = 60.0  # spawn → initialize answered (Gemini needs ~1.2 s, npx shims more)
# An agent whose stdout has carried junk (not JSON-RPC) has this long more to answer
# `initialize`: a program that is no ACP agent fails in seconds, not at INIT_TIMEOUT.
JUNK_GRACE = 3.0
REQUEST_TIMEOUT = 180.0  # session/new, load (a long history), list …
STDERR_LINES_IN_ERRORS = 15

ExitHandler = Callable[[], bool]
"""Called when the agent exits on its own; True when a running turn took the news."""


def describe_error(error: BaseException) -> str:
    """A one-line description of a failed ACP request."""
    if isinstance(error, RpcError):
        code, data = error.code, error.data
        text = str(error)
        detail = None
        if isinstance(data, dict):
            detail = data.get("details") or data.get("message") or data.get("reason")
        elif isinstance(data, str):
            detail = data
        if detail and str(detail) not in text:
            text = f"{text}: {detail}"
        return f"{text} ({code})"
    if isinstance(error, WrongAnswer):
        return f"unexpected answer from the agent ({error})"
    return str(error) or type(error).__name__


class AgentConnection:
    """A running agent and the connection to it (see the module docstring).

    Public attributes: `process` (the `AgentProcess`: pid, stderr tail), `conn` (the
    `JsonRpc` connection), `env` (what the agent runs with, e.g. where it keeps its files),
    and what `initialize` answered, as the agent wrote it: `agent_capabilities`,
    `auth_methods`, `agent_info`; `closes_sessions` (it advertised `session/close`).
    """

    def __init__(
        self,
        name: str,
        process: AgentProcess,
        conn: JsonRpc,
        env: dict[str, str],
        on_exit: ExitHandler,
        emit: Callable[[BaseEvent], None],
    ) -> None:
        self.name = name
        self.process = process
        self.conn = conn
        self.env = env
        self.agent_capabilities: dict[str, Any] = {}
        self.auth_methods: list[dict[str, Any]] = []
        self.agent_info: dict[str, Any] | None = None
        #: The agent advertised `session/close` (set by the `initialize` answer).
        self.closes_sessions = False
        self._on_exit = on_exit
        self._emit = emit
        self._closing = False
        self._calls_in_flight = 0
        self._idle = asyncio.Event()  # set while no request is under way
        self._idle.set()
        self._death_told = False  # a failing request has reported the agent's death
        self._watch = asyncio.get_running_loop().create_task(self._watch_exit())

    @classmethod
    async def launch(
        cls,
        name: str,
        argv: Sequence[str],
        env: dict[str, str],
        cwd: Path,
        *,
        install_hint: str,
        on_request: RequestHandler,
        on_notification: NotificationHandler,
        on_exit: ExitHandler,
        emit: Callable[[BaseEvent], None],
        sandbox: Sandbox | None = None,
        booting: Callable[[], object] | None = None,
        spawned: Spawned | None = None,
    ) -> AgentConnection:
        """Spawn `argv` (inside `sandbox` when given), connect to it (the agent's requests go
        to `on_request`, its notifications to `on_notification`) and `initialize` it; closed
        on failure. `booting` is called once the agent is spawned, while it boots; `spawned`:
        the agent started already, adopted."""
        if spawned is not None:
            process = await AgentProcess.adopt(name, spawned)
        else:
            process = await AgentProcess.spawn(name, argv, env, cwd, install_hint, sandbox)
        try:
            stdin, stdout = process.process.stdin, process.process.stdout
            assert stdin is not None and stdout is not None
            held: list[str] = []  # until initialize is answered: junk alone is the error

            def dropped(message: str) -> None:  # a broken or hostile agent's junk: say so once
                if seen.messages:
                    emit(Notice(message=f"{name}: {message}", level="warning"))
                else:
                    held.append(message)

            seen = StdoutSeen()
            guarded = guard_stdout(stdout, dropped, seen=seen)
            conn = JsonRpc(guarded, stdin, on_request, on_notification)
        except BaseException:
            await process.stop()
            raise
        agent = cls(name, process, conn, env, on_exit, emit)
        try:
            if booting is not None:
                booting()
            await agent._initialize(seen)
        except BaseException:
            await agent.close()
            raise
        for message in held:
            emit(Notice(message=f"{name}: {message}", level="warning"))
        return agent

    async def _junk_only(self, seen: StdoutSeen) -> str:
        """Wait until the agent has written junk and then JUNK_GRACE has passed; the error."""
        await seen.junk.wait()
        await asyncio.sleep(JUNK_GRACE)
        sample = (seen.first_junk or b"").decode("utf-8", "replace")
        return (
            f"{self.name} is not speaking ACP: its output is not JSON-RPC "
            f"(it began {sample!r}); check providers.{self.name}.command"
        )

    async def _initialize(self, seen: StdoutSeen) -> None:
        request = asyncio.ensure_future(self._hello())
        junk = asyncio.ensure_future(self._junk_only(seen))
        try:
            await asyncio.wait({request, junk}, return_when=asyncio.FIRST_COMPLETED)
            if not request.done():
                raise self.failure(junk.result())
            request.result()
        except (RpcError, WrongAnswer) as e:
            raise self.failure(f"{self.name}: initialize failed: {describe_error(e)}") from None
        finally:
            request.cancel()
            junk.cancel()

    async def _hello(self) -> None:
        """`initialize`: what avatar offers, and what the agent answers kept here."""
        client_info = {"name": "avatar", "title": "avatar", "version": __version__}
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": CLIENT_CAPABILITIES,
            "clientInfo": client_info,
        }
        init = fields(await self.request("initialize", params, INIT_TIMEOUT), "initialize")
        caps, methods, info = (
            init.get(k) for k in ("agentCapabilities", "authMethods", "agentInfo")
        )
        self.agent_capabilities = caps if isinstance(caps, dict) else {}
        self.auth_methods = [m for m in methods or [] if isinstance(m, dict)]
        self.agent_info = info if isinstance(info, dict) else None
        session = self.agent_capabilities.get("sessionCapabilities")
        self.closes_sessions = isinstance(session, dict) and session.get("close") is not None

    # -- state ------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        """True while the agent process runs and the connection has not been closed."""
        return not self._closing and self.process.returncode is None

    def not_running(self) -> ProviderError:
        """The error for a request to an agent that is gone: how it went, if it died."""
        if self.process.returncode is not None and not self._closing:
            return self.failure(self.process.death(self.name))
        return ProviderError(f"{self.name} is not running")

    def stderr_tail(self, lines: int = STDERR_LINES_IN_ERRORS) -> str | None:
        """The agent's last stderr lines (for error messages)."""
        return self.process.stderr.text(lines) or None

    def explain(self, message: str) -> str:
        """`message` (a failure of the agent), naming the path its walls refused it and the
        key that opens it when its words or its stderr say so (`avatar.bridges.walled_out`)."""
        return explained(self.name, message, self.process.stderr.text(), self.process.sandbox)

    def failure(self, message: str) -> ProviderError:
        """The error for a failure of the agent: `message` explained, its stderr's tail."""
        return ProviderError(self.explain(message), self.stderr_tail())

    # -- requests ---------------------------------------------------------------------------

    async def request(
        self, method: str, params: Mapping[str, Any], timeout: float | None = REQUEST_TIMEOUT
    ) -> Any:
        """Send request `method` and await its answer (as `call` does): the agent's JSON, an
        `RpcError` when it answers with an error."""
        return await self.call(method, self.conn.request(method, params), timeout)

    async def call(self, what: str, aw: Awaitable[T], timeout: float | None = REQUEST_TIMEOUT) -> T:
        """Await one request; a dead or silent agent becomes a ProviderError with its stderr."""
        if self._closing:
            if asyncio.iscoroutine(aw):
                aw.close()
            raise ProviderError(f"{self.name} is not running")
        self._calls_in_flight += 1
        self._idle.clear()
        try:
            return await asyncio.wait_for(aw, timeout)
        except ConnectionError:
            self._death_told = True
            await self.settle_death()
            how = self.process.describe_exit()
            raise self.failure(f"{self.name} exited during {what} ({how})") from None
        except TimeoutError:
            raise self.failure(f"{self.name} did not answer {what} within {timeout:g} s") from None
        finally:
            self._calls_in_flight -= 1
            if not self._calls_in_flight:
                self._idle.set()

    async def notify_cancel(self, session_id: str) -> None:
        """`session/cancel` (a notification: nothing to wait for, and failures do not matter)."""
        if self.alive:
            with contextlib.suppress(Exception):
                await self.conn.cancel(session_id)

    # -- death ------------------------------------------------------------------------------

    async def settle_death(self) -> None:
        """Give a dying agent a moment to exit and flush stderr, for a useful error."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.process.exited), 1.0)
        await self.process.stderr_settled(0.5)

    async def death_error(self) -> Error:
        """The `Error` event for an agent that exited on its own."""
        await self.settle_death()
        return Error(message=self.explain(self.process.death(self.name)), detail=self.stderr_tail())

    async def _watch_exit(self) -> None:
        await asyncio.shield(self.process.exited)
        if self._closing or self._on_exit():
            return
        # A request under way reports the death itself, with the same stderr tail — unless its
        # answer came just before the death, and it succeeds: then the death is told here.
        await self._idle.wait()
        if not (self._closing or self._death_told):
            self._emit(await self.death_error())

    # -- shutdown ---------------------------------------------------------------------------

    def can_close(self) -> bool:
        """True when the agent advertised `session/close`."""
        return self.closes_sessions

    async def close(self, session_id: str | None = None) -> None:
        """End the agent and the connection.

        With an open session on an agent that advertises `session/close`, the session is
        closed first; once the agent has answered, its files are safe and the process group
        ends at once. Otherwise stdin is closed first and the agent gets a moment to flush
        its session files and exit by itself (Gemini does; others wait for a signal).
        """
        self._closing = True
        closed = False
        if session_id is not None and self.can_close() and self.process.returncode is None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.conn.close_session(session_id), 2.0)
                closed = True
        await self.process.stop(at_once=closed)
        with contextlib.suppress(Exception):
            await self.conn.close()
        if self._watch is not asyncio.current_task():
            self._watch.cancel()


#: The JSON-RPC error an agent answers with when it wants `authenticate` first.
AUTH_REQUIRED = -32000


def auth_message(name: str, hint: str | None, ids: list[str], error: BaseException) -> str:
    """The one line for an agent that wants authentication first: its words, the provider's
    login hint, and the methods `providers.NAME.auth_method` may name."""
    text = f"{name} requires authentication ({describe_error(error)})"
    if hint:
        text += f"; {hint}"
    if ids:
        text += f"; or set providers.{name}.auth_method to one of: {', '.join(ids)}"
    return text
