"""The client side of ACP: what avatar answers when the agent calls back.

`AvatarClient` implements the SDK's `Client` protocol for every session on one agent: each call
goes to the bridge of the session it names (`avatar.bridges.acp.shared.Routes`): session
updates, translated into avatar events (`avatar.bridges.acp.updates`), to its bridge,
permission requests to that bridge's permission policy, file access through its `FileAccess`,
terminals through its `TerminalManager`. A refusal becomes a JSON-RPC error whose message the
agent (and its model) can read; a call about no session of ours is refused.

This module imports `acp`; the bridge imports it only after spawning the agent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    CreateTerminalResponse,
    DeniedOutcome,
    EnvVariable,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from avatar.bridges.acp.fs import AccessDenied
from avatar.bridges.acp.permission import pick_option
from avatar.bridges.acp.terminal import ExitStatus
from avatar.bridges.acp.updates import SessionUpdate, translate

if TYPE_CHECKING:
    from acp.interfaces import Agent

    from avatar.bridges.acp.shared import Route, Routes
    from avatar.core.events import BaseEvent

UpdateHandler = Callable[[str, SessionUpdate, list["BaseEvent"]], None]
"""Gets each session update (by session id) with the avatar events it translates to."""
PermissionDecider = Callable[[str, ToolCallUpdate], Awaitable[bool | None]]
"""Returns True (allow), False (deny) or None (the turn was cancelled while asking)."""


def _refuse(refused: AccessDenied) -> RequestError:
    message = str(refused)
    return RequestError(refused.code, message, {"reason": message})


def _exit_status(status: ExitStatus | None) -> TerminalExitStatus | None:
    if status is None:
        return None
    return TerminalExitStatus(exit_code=status.exit_code, signal=status.signal)


class AvatarClient:
    """avatar's answers to an ACP agent's requests and notifications, each from the bridge of
    the session it names (`routes`)."""

    def __init__(self, routes: Routes) -> None:
        self._routes = routes

    def on_connect(self, conn: Agent) -> None:
        """Nothing to do: the bridge holds the connection."""

    def _route(self, session_id: str) -> Route:
        route = self._routes.of(session_id)
        if route is None:
            raise RequestError.invalid_params({"sessionId": f"no session {session_id} here"})
        return route

    # -- updates ----------------------------------------------------------------------------

    async def session_update(self, session_id: str, update: SessionUpdate, **kwargs: Any) -> None:
        """Translate the update and hand it to its bridge synchronously, so arrival order is
        kept (the SDK runs each notification as its own task); one of no session of ours is
        dropped."""
        route = self._routes.of(session_id)
        if route is None:
            return
        terminals = route.terminals

        def terminal_text(terminal_id: str) -> str | None:
            # The output so far of a terminal a tool call shows (None when there is none).
            try:
                return terminals.output(terminal_id)[0]
            except Exception:
                return None

        route.on_update(session_id, update, translate(update, terminal_text))

    # -- permission -------------------------------------------------------------------------

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        """Ask avatar's permission policy and select the agent's matching option."""
        route = self._routes.of(session_id)
        allowed = None if route is None else await route.decide(session_id, tool_call)
        option = None if allowed is None else pick_option(options, allowed)
        if option is None:
            # Cancelled turn, or the agent offered no option of that kind.
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=option.option_id, outcome="selected")
        )

    # -- files ------------------------------------------------------------------------------

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        """Read a text file inside the session's directories."""
        try:
            return ReadTextFileResponse(
                content=self._route(session_id).files.read(path, line, limit)
            )
        except AccessDenied as e:
            raise _refuse(e) from None

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        """Write a text file inside the session's writable directories."""
        try:
            self._route(session_id).files.write(path, content)
        except AccessDenied as e:
            raise _refuse(e) from None
        return WriteTextFileResponse()

    # -- terminals --------------------------------------------------------------------------

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        """Start a command in a terminal the agent can read, wait for and kill."""
        try:
            terminal_id = await self._route(session_id).terminals.create(
                command,
                args,
                {v.name: v.value for v in env or []},
                cwd,
                output_byte_limit,
            )
        except AccessDenied as e:
            raise _refuse(e) from None
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        """The terminal's output so far."""
        try:
            text, truncated, status = self._route(session_id).terminals.output(terminal_id)
        except AccessDenied as e:
            raise _refuse(e) from None
        return TerminalOutputResponse(
            output=text, truncated=truncated, exit_status=_exit_status(status)
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        """Wait until the terminal's command exits."""
        try:
            status = await self._route(session_id).terminals.wait(terminal_id)
        except AccessDenied as e:
            raise _refuse(e) from None
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse:
        """Kill the terminal's command (the terminal stays readable until released)."""
        try:
            await self._route(session_id).terminals.kill(terminal_id)
        except AccessDenied as e:
            raise _refuse(e) from None
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        """Kill the command if needed and forget the terminal."""
        try:
            await self._route(session_id).terminals.release(terminal_id)
        except AccessDenied as e:
            raise _refuse(e) from None
        return ReleaseTerminalResponse()

    # -- extensions -------------------------------------------------------------------------

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """avatar implements no extension methods."""
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Extension notifications are ignored."""
