"""Opening ACP sessions: the load → resume → new cascade of docs/design.md §2.

1. A session id: `session/load` when advertised, else (or when it fails) `session/resume`.
2. Continue-last: the newest session in the cwd from `session/list` (every page, newest by
   `updated_at`), or from the provider's store where the agent cannot list; then 1.
3. `session/new` when there is nothing to reopen: the agent said it does not have the
   session, or cannot reopen sessions at all, or there is no earlier session to continue.
   Any other failure of 1 (or of a fork) is an error, not a new session (`failures`).

`SessionOpener.open()` never tells the user anything about the cascade itself: it returns an
`OpenResult` saying what was opened and, for a fallback, why, and the bridge reports that in
one place. Each step catches the agent's error (`RpcError`) and an answer that is not what the
protocol says (`WrongAnswer`): agents answer unsupported methods either way. Authentication
problems are not fallbacks: they surface as errors, and so does a failing `session/new`
(nothing is left to fall back to).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from avatar.bridges.acp import quirks as acp_quirks
from avatar.bridges.acp.connection import AUTH_REQUIRED, auth_message, describe_error
from avatar.bridges.acp.failures import Failure, failure
from avatar.bridges.acp.jsonrpc import RpcError, WrongAnswer, fields, text_field
from avatar.bridges.acp.listing import PageFetcher, newest_in
from avatar.bridges.acp.permission import get
from avatar.bridges.base import ForkFailedError, not_supported
from avatar.bridges.mcp import build_mcp_servers
from avatar.core.errors import ProviderError

if TYPE_CHECKING:
    from pathlib import Path

    from avatar.bridges.acp.connection import AgentConnection
    from avatar.bridges.acp.stream import UpdateRouter
    from avatar.bridges.base import BridgeContext, OpenRequest
    from avatar.core.events import OpenHow
    from avatar.providers.capabilities import SessionCapabilities

ANY_SESSION = "*"  # `opening` while the agent has yet to name the new session


@dataclass(frozen=True)
class Offered:
    """What an agent's answer to an open offers: the session's config options, the model it
    runs where the agent says so outside them (`models.currentModelId`), and its session
    modes where it offers them outside them too (`modes`: Gemini's)."""

    config_options: list[Any]
    model: str | None = None
    modes: Any = None


@dataclass(frozen=True)
class OpenResult:
    """What opening a session came to: the session, how, and why it is not what was asked.

    `via` is the request that opened it (`session/load`, `session/resume`, `session/new`,
    `session/fork`); `fell_back_because` lists what failed first (empty: opened as asked).
    """

    session_id: str
    how: OpenHow
    via: str
    offered: Offered
    fell_back_because: tuple[str, ...] = ()

    @property
    def config_options(self) -> list[Any]:
        """The session's config options (model, mode …) as the agent offered them."""
        return self.offered.config_options

    def fallback_notice(self) -> tuple[str, str] | None:
        """The (message, level) telling the user what failed and what was opened instead."""
        if not self.fell_back_because:
            return None
        why = "; ".join(self.fell_back_because)
        if self.via == "session/new":
            return f"{why}; opened a new session {self.session_id} instead", "warning"
        return f"{why}; reopened it with {self.via} instead", "info"


class SessionOpener:
    """Opens sessions on one running agent (one per agent start; see the module docstring).

    It also knows which session's updates belong to the bridge: the one open and the one
    being opened (`wants_updates_of`).
    """

    def __init__(
        self,
        ctx: BridgeContext,
        agent: AgentConnection,
        capabilities: SessionCapabilities,
        router: UpdateRouter,
        same_minute: acp_quirks.SameMinuteWait,
        notify: acp_quirks.Notify,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        self.ctx = ctx
        #: `_meta` every session request carries (the switch that holds back the project's
        #: agent config, where the agent takes it there: `avatar.bridges.held_back`).
        self.meta = dict(meta) if meta else None
        self.agent = agent
        self.capabilities = capabilities
        self.router = router
        self.same_minute = same_minute
        self.notify = notify
        self.name = ctx.spec.name
        #: The session the agent is in, set as soon as a request opened it.
        self.current: str | None = None
        #: The session being opened: its id (load/resume), ANY_SESSION (new/fork: the agent
        #: picks the id), or None. Its updates are wanted before the response names it.
        self.opening: str | None = None
        self._mcp: list[dict[str, Any]] | None = None

    def wants_updates_of(self, session_id: str) -> bool:
        """True for updates of the open session or of one being opened.

        One agent process can hold several sessions (after `/new`, a fork or a resume on the
        same bridge); a late update of a session the bridge has left must not show up in
        the current one.
        """
        current, opening = self.current, self.opening
        return current is None or opening == ANY_SESSION or session_id in (current, opening)

    # -- the cascade ------------------------------------------------------------------------

    async def open(self, request: OpenRequest) -> OpenResult:
        """Open what `request` asks for, falling back as docs/design.md §2 says."""
        if request.mode == "new":
            result = await self.new()
            if request.session_id and request.session_id != result.session_id:
                why = f"{self.name} chooses its own session ids"
                return _fell_back(result, [why])
            return result
        if request.mode == "continue":
            return await self.continue_last()
        # The engine resolved the session (`request.info`); the agent needs only its id.
        session_id = request.info.id if request.info is not None else request.session_id
        assert session_id, f"{request.mode} needs a session id"
        if request.mode == "fork":
            return await self.fork(session_id)
        if request.files_gone:
            why = f"{self.name}'s files of session {session_id} are gone"
            return _fell_back(await self.new(), [why])
        reopened = await self.reopen(session_id, None)
        if isinstance(reopened, OpenResult):
            return reopened
        return await self._instead(reopened, f"reopen session {session_id}")

    async def reopen(self, session_id: str, how: OpenHow | None) -> OpenResult | list[Failure]:
        """Load, else resume; the result, or why every attempt failed."""
        failures: list[Failure] = []
        if self.capabilities.can_load:
            try:
                options = await self._load(session_id)
            except (RpcError, WrongAnswer) as e:
                failures.append(failure(f"session/load of {session_id}", e))
            else:
                # Return once the replay is complete (Gemini sends part of it after the load
                # response), so the caller sees the whole history before anything else.
                await self.router.replay_settled()
                return OpenResult(session_id, how or "loaded", "session/load", options)
        if self.capabilities.can_resume:
            try:
                options = await self._resume(session_id)
            except (RpcError, WrongAnswer) as e:
                failures.append(failure(f"session/resume of {session_id}", e))
            else:
                result = OpenResult(session_id, how or "resumed", "session/resume", options)
                return _fell_back(result, [f.text for f in failures])
        if not self.capabilities.can_load and not self.capabilities.can_resume:
            why = f"{self.name} cannot reopen sessions (no session/load or session/resume)"
            failures.append(Failure(why, missing=True))
        return failures

    async def continue_last(self) -> OpenResult:
        """Reopen the newest session of this provider in the cwd, else open a new one."""
        fetch: PageFetcher | None = None
        if self.capabilities.can_list and "list_from_disk" not in self.ctx.spec.quirks:
            fetch = self.list_page
        latest, why_none = await newest_in(self.name, self._cwd(), fetch, self.ctx.store)
        if latest is None:  # nothing to continue: not an error
            return _fell_back(await self.new(), why_none)
        result = await self.reopen(latest.id, "continued")
        if isinstance(result, OpenResult):
            return result
        return await self._instead(result, f"continue session {latest.id}")

    async def fork(self, session_id: str) -> OpenResult:
        """`session/fork` where advertised. An agent that says it does not have the session
        may fork only sessions it has open (the REPL's `/fork` forks the open one): the
        session is opened (load, else resume) and forked again. A failed fork is a
        `ForkFailedError`, never a new empty session in its place (the history would be
        lost)."""
        if not self.capabilities.can_fork:
            raise not_supported(self.name, "fork")
        tried = await self._fork(session_id)
        if isinstance(tried, OpenResult):
            return tried
        why = [tried.text]
        if tried.missing and self.current != session_id:
            reopened = await self.reopen(session_id, None)
            if isinstance(reopened, OpenResult):
                again = await self._fork(session_id)
                if isinstance(again, OpenResult):
                    return again
                why.append(again.text + " (with the session open)")
            else:
                why += [f.text for f in reopened]
        raise ForkFailedError(
            self.agent.explain(
                f"{self.name} could not fork session {session_id}: {'; '.join(why)}"
            ),
            self.agent.stderr_tail(),
        )

    async def _fork(self, session_id: str) -> OpenResult | Failure:
        """One `session/fork` of `session_id`: the fork, or why it failed."""
        try:
            with self._opening(ANY_SESSION):
                resp = await self._authed("session/fork", self._params(sessionId=session_id))
                forked = text_field(resp, "sessionId", "session/fork")
        except (RpcError, WrongAnswer) as e:
            return failure(f"session/fork of {session_id}", e)
        self.current = forked
        self.router.opened(guard=not acp_quirks.quiet_open(self.ctx.spec))
        return OpenResult(forked, "forked", "session/fork", _offered(resp))

    async def _instead(self, failures: list[Failure], what: str) -> OpenResult:
        """A new session in place of one the agent does not have (or cannot reopen); any
        other failure is an error naming every attempt."""
        why = [f.text for f in failures]
        if any(not f.missing for f in failures):
            raise self.agent.failure(f"{self.name} could not {what}: {'; '.join(why)}")
        return _fell_back(await self.new(), why)

    async def new(self) -> OpenResult:
        """`session/new`; a failure is a ProviderError (the end of every cascade)."""
        try:
            with self._opening(ANY_SESSION):
                resp = await self._authed("session/new", self._params())
                session_id = text_field(resp, "sessionId", "session/new")
        except (RpcError, WrongAnswer) as e:
            raise self.agent.failure(
                f"{self.name}: session/new failed: {describe_error(e)}"
            ) from None
        self.current = session_id
        self.router.opened(guard=not acp_quirks.quiet_open(self.ctx.spec))
        return OpenResult(session_id, "new", "session/new", _offered(resp))

    # -- single steps -----------------------------------------------------------------------

    async def _load(self, session_id: str) -> Offered:
        with self._opening(session_id):
            async with self._guard(session_id):
                self.router.begin_replay()
                try:
                    params = self._params(sessionId=session_id)
                    resp = await self._authed("session/load", params, required=False)
                except BaseException:
                    self.router.end_replay()
                    raise
                quiet = acp_quirks.replay_quiet(self.ctx.spec)
                self.router.settle(quiet, acp_quirks.REPLAY_LIMIT)
        self.current = session_id
        return _offered(resp)

    def _guard(self, session_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        if "same_minute_load" not in self.ctx.spec.quirks:
            return contextlib.nullcontext()
        backup_dir = self.ctx.avatar_home / "backups" / self.name
        # Wait out the minute only while the agent lives: a death meanwhile is reported at
        # once (by the load that follows), not after up to a minute (the kill tests).
        wait = replace(self.same_minute, sleep=self._sleep_while_alive)
        return acp_quirks.guarded_load(
            self.name, self.agent.env, session_id, backup_dir, wait, self.notify
        )

    async def _sleep_while_alive(self, seconds: float) -> None:
        sleeping = asyncio.ensure_future(self.same_minute.sleep(seconds))
        try:
            await asyncio.wait(
                {sleeping, self.agent.process.exited}, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            sleeping.cancel()

    async def _resume(self, session_id: str) -> Offered:
        with self._opening(session_id):
            resp = await self._authed("session/resume", self._params(sessionId=session_id))
        self.current = session_id
        self.router.opened(guard=not acp_quirks.quiet_open(self.ctx.spec))
        return _offered(resp)

    async def list_page(self, cursor: str | None) -> dict[str, Any]:
        """One page of `session/list` for the cwd (None: the first page)."""
        params = {"cwd": str(self._cwd())} | ({"cursor": cursor} if cursor else {})
        return await self._authed("session/list", params, required=False)

    @contextlib.contextmanager
    def _opening(self, session_id: str) -> Iterator[None]:
        self.opening = session_id
        try:
            yield
        finally:
            self.opening = None

    # -- request plumbing -------------------------------------------------------------------

    async def _authed(
        self, what: str, params: dict[str, Any], *, required: bool = True
    ) -> dict[str, Any]:
        """Send session request `what`; on "authentication required", authenticate once if
        configured. Its answer's fields (`jsonrpc.fields`: a null answer is none where not
        `required`, else a `WrongAnswer`)."""
        try:
            return fields(await self.agent.request(what, params), what, required=required)
        except RpcError as e:
            if e.code != AUTH_REQUIRED:
                raise
            method = self._auth_method()
            if method is None:
                raise ProviderError(self._auth_message(e)) from None
            try:
                await self.agent.request("authenticate", {"methodId": method})
            except RpcError as auth_error:
                raise ProviderError(
                    f"{self.name}: authentication with method {method!r} failed: "
                    f"{describe_error(auth_error)}"
                ) from None
            try:
                return fields(await self.agent.request(what, params), what, required=required)
            except RpcError as again:
                if again.code == AUTH_REQUIRED:
                    raise ProviderError(self._auth_message(again)) from None
                raise

    def _auth_method(self) -> str | None:
        cfg = self.ctx.settings.provider_config(self.name)
        return cfg.auth_method if cfg is not None and cfg.auth_method else None

    def _auth_message(self, error: BaseException) -> str:
        ids = [str(m.get("id")) for m in self.agent.auth_methods]
        return auth_message(self.name, self.ctx.spec.auth_hint, ids, error)

    def _params(self, **more: Any) -> dict[str, Any]:
        """What every request opening a session sends: the cwd, the MCP servers, the
        additional directories where advertised, avatar's `_meta`; and `more`."""
        params: dict[str, Any] = {"cwd": str(self._cwd()), "mcpServers": self._mcp_servers()}
        dirs = self._additional_dirs()
        if dirs is not None:
            params["additionalDirectories"] = dirs
        if self.meta:
            params["_meta"] = self.meta
        return params | more

    def _mcp_servers(self) -> list[dict[str, Any]]:
        # Built once per agent start, so a skipped server is reported once, not per attempt.
        if self._mcp is None:
            mcp_caps = self.agent.agent_capabilities.get("mcpCapabilities")
            self._mcp, skipped = build_mcp_servers(self.ctx.settings.mcp_servers, mcp_caps)
            for message in skipped:
                self.notify(message, "warning")
        return self._mcp

    def _additional_dirs(self) -> list[str] | None:
        if not self.ctx.additional_dirs:
            return None
        session_caps = self.agent.agent_capabilities.get("sessionCapabilities")
        if get(session_caps, "additionalDirectories") is None:
            return None  # not advertised: agents may reject the field
        return [str((self.ctx.cwd / d).resolve()) for d in self.ctx.additional_dirs]

    def _cwd(self) -> Path:
        return self.ctx.cwd.resolve()


def _offered(resp: Mapping[str, Any]) -> Offered:
    """What an open's answer offers: its config options, the model it says it runs (the
    unstable `models.currentModelId`, where Gemini CLI and claude-agent-acp say it), its
    session modes."""
    options = [o for o in get(resp, "configOptions") or [] if isinstance(o, dict)]
    model = get(get(resp, "models"), "currentModelId")
    return Offered(options, model if isinstance(model, str) else None, get(resp, "modes"))


def _fell_back(result: OpenResult, why: list[str]) -> OpenResult:
    """`result`, noting what failed before it (nothing noted when nothing failed)."""
    if not why:
        return result
    return replace(result, fell_back_because=tuple(why))
