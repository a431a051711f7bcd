"""Opening ACP sessions: the load → resume → new cascade of DESIGN §2.

1. A session id: `session/load` when advertised, else (or when it fails) `session/resume`.
2. Continue-last: the newest session in the cwd from `session/list` (every page, newest by
   `updated_at`), or from the provider's on-disk reader where the agent cannot list; then 1.
3. Whatever failed ends in `session/new`, and a `Notice` says what failed and what was opened.

Each step catches `RequestError` and pydantic `ValidationError` (agents answer unsupported
methods either way). Authentication problems are not fallbacks: they surface as errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from avatar.bridges import acp_quirks
from avatar.bridges.acp_listing import list_pages, load_store, newest, same_dir
from avatar.bridges.mcp import build_mcp_servers
from avatar.errors import NotSupportedError, ProviderError
from avatar.events import Notice, OpenHow, SessionStarted
from avatar.sessions.types import SessionInfo

if TYPE_CHECKING:
    from acp.core import ClientSideConnection

    from avatar.bridges.acp_stream import UpdateRouter
    from avatar.bridges.base import BridgeContext, SessionCapabilities
    from avatar.sessions.store import SessionStore

T = TypeVar("T")

AUTH_REQUIRED = -32000
ANY_SESSION = "*"  # `_opening` while the agent has yet to name the new session


def describe_error(error: BaseException) -> str:
    """A one-line description of a failed ACP request."""
    from acp import RequestError

    if isinstance(error, RequestError):
        text = str(error)
        data = error.data
        detail = None
        if isinstance(data, dict):
            detail = data.get("details") or data.get("message") or data.get("reason")
        elif isinstance(data, str):
            detail = data
        if detail and str(detail) not in text:
            text = f"{text}: {detail}"
        return f"{text} ({error.code})"
    if isinstance(error, ValidationError):
        return f"unexpected answer from the agent ({error.error_count()} validation errors)"
    return str(error) or type(error).__name__


class ACPSessionMixin:
    """Session operations for an ACP bridge; the bridge supplies connection and plumbing."""

    # Provided by the bridge.
    ctx: BridgeContext
    conn: ClientSideConnection | None
    capabilities: SessionCapabilities
    session_id: str | None
    router: UpdateRouter
    agent_capabilities: Any
    auth_methods: list[Any]
    config_options: list[Any]
    # Gemini same-minute load: wait at most this long for the minute to turn (0 = refuse).
    same_minute_wait: float = 60.0
    # The session being opened: its id (load/resume), ANY_SESSION (new/fork: the agent picks
    # the id), or None. Its updates are wanted before the response names it the open one.
    _opening: str | None = None

    if TYPE_CHECKING:

        @property
        def name(self) -> str: ...

        async def _call(self, what: str, aw: Awaitable[T], timeout: float | None = None) -> T: ...

    # -- plumbing ---------------------------------------------------------------------------

    def notice(self, message: str, level: str = "info") -> None:
        """Tell the user something through the event sink."""
        self.ctx.emit(Notice(message=message, level="warning" if level == "warning" else "info"))

    def _started(self, how: OpenHow) -> SessionStarted:
        assert self.session_id is not None
        return SessionStarted(
            session_id=self.session_id,
            provider=self.name,
            how=how,
            model=self.ctx.model or self.ctx.spec.model,
            cwd=str(self.ctx.cwd),
        )

    def _mcp_servers(self) -> list[Any]:
        # Built once per agent start, so a skipped server is reported once, not per attempt.
        cached = getattr(self, "_mcp_cache", None)
        if cached is None:
            mcp_caps = getattr(self.agent_capabilities, "mcp_capabilities", None)
            cached, skipped = build_mcp_servers(self.ctx.settings.mcp_servers, mcp_caps)
            for message in skipped:
                self.notice(message, "warning")
            self._mcp_cache = cached
        return cached

    def _additional_dirs(self) -> list[str] | None:
        if not self.ctx.additional_dirs:
            return None
        session_caps = getattr(self.agent_capabilities, "session_capabilities", None)
        if getattr(session_caps, "additional_directories", None) is None:
            return None  # not advertised: agents may reject the field
        return [str((self.ctx.cwd / d).resolve()) for d in self.ctx.additional_dirs]

    async def _authed(self, what: str, make: Callable[[], Awaitable[T]]) -> T:
        """Run a session request; on "authentication required", authenticate once if configured."""
        from acp import RequestError

        try:
            return await self._call(what, make())
        except RequestError as e:
            if e.code != AUTH_REQUIRED:
                raise
            method = self._auth_method()
            if method is None:
                raise ProviderError(self._auth_message(e)) from None
            assert self.conn is not None
            try:
                await self._call("authenticate", self.conn.authenticate(method_id=method))
            except RequestError as auth_error:
                raise ProviderError(
                    f"{self.name}: authentication with method {method!r} failed: "
                    f"{describe_error(auth_error)}"
                ) from None
            try:
                return await self._call(what, make())
            except RequestError as again:
                if again.code == AUTH_REQUIRED:
                    raise ProviderError(self._auth_message(again)) from None
                raise

    def _auth_method(self) -> str | None:
        cfg = self.ctx.settings.provider_config(self.name)
        return cfg.auth_method if cfg is not None and cfg.auth_method else None

    def _auth_message(self, error: BaseException) -> str:
        ids = [m.id for m in self.auth_methods or []]
        hint = self.ctx.spec.auth_hint
        text = f"{self.name} requires authentication ({describe_error(error)})"
        if hint:
            text += f"; {hint}"
        if ids:
            text += f"; or set providers.{self.name}.auth_method to one of: {', '.join(ids)}"
        return text

    def _agent_env(self) -> dict[str, str]:
        """The environment the agent runs with (where it keeps its files)."""
        return dict(self.ctx.env) if self.ctx.env else {**os.environ, **self.ctx.spec.env}

    def _session_cwd(self) -> str:
        return str(self.ctx.cwd.resolve())

    # -- single steps -----------------------------------------------------------------------

    async def _do_new(self) -> str:
        from acp import RequestError

        assert self.conn is not None
        conn = self.conn
        try:
            with self._opening_session(ANY_SESSION):
                resp = await self._authed(
                    "session/new",
                    lambda: conn.new_session(
                        cwd=self._session_cwd(),
                        additional_directories=self._additional_dirs(),
                        mcp_servers=self._mcp_servers(),
                    ),
                )
        except (RequestError, ValidationError) as e:
            # The end of every cascade: nothing left to fall back to.
            raise ProviderError(f"{self.name}: session/new failed: {describe_error(e)}") from None
        self.session_id = resp.session_id
        self.config_options = list(resp.config_options or [])
        return resp.session_id

    def wants_updates_of(self, session_id: str) -> bool:
        """True for updates of the open session or of one being opened.

        One agent process can hold several sessions (after `/new`, a fork or a resume on the
        same bridge); a late update of a session the bridge has left must not show up in
        the current one.
        """
        current, opening = self.session_id, self._opening
        return current is None or opening == ANY_SESSION or session_id in (current, opening)

    @contextlib.contextmanager
    def _opening_session(self, session_id: str) -> Iterator[None]:
        self._opening = session_id
        try:
            yield
        finally:
            self._opening = None

    async def _do_load(self, session_id: str) -> None:
        with self._opening_session(session_id):
            await self._load(session_id)

    async def _load(self, session_id: str) -> None:
        assert self.conn is not None
        conn = self.conn
        guard = await self._guard_history(session_id)
        self.router.begin_replay()
        try:
            resp = await self._authed(
                "session/load",
                lambda: conn.load_session(
                    cwd=self._session_cwd(),
                    session_id=session_id,
                    mcp_servers=self._mcp_servers(),
                    additional_directories=self._additional_dirs(),
                ),
            )
        except BaseException:
            self.router.end_replay()
            if guard is not None:
                restored = guard.restore()
                acp_quirks.remove_companions(self._agent_env(), session_id)
                if restored:
                    self.notice(
                        f"{self.name} damaged the history of {session_id} while failing to load "
                        f"it; avatar restored it from its backup",
                        "warning",
                    )
                guard.discard()
            raise
        self.router.settle(acp_quirks.replay_quiet(self.ctx.spec), acp_quirks.REPLAY_LIMIT)
        if guard is not None:
            acp_quirks.remove_companions(self._agent_env(), session_id)
            if guard.restore(only_damaged=True):
                self.notice(
                    f"{self.name} shrank the history file of {session_id} while loading it; "
                    "avatar restored it from its backup",
                    "warning",
                )
            guard.discard()
        self.session_id = session_id
        self.config_options = list(getattr(resp, "config_options", None) or [])

    async def _do_resume(self, session_id: str) -> None:
        assert self.conn is not None
        conn = self.conn
        with self._opening_session(session_id):
            resp = await self._authed(
                "session/resume",
                lambda: conn.resume_session(
                    session_id=session_id,
                    cwd=self._session_cwd(),
                    additional_directories=self._additional_dirs(),
                    mcp_servers=self._mcp_servers(),
                ),
            )
        self.session_id = session_id
        self.config_options = list(resp.config_options or [])

    async def _guard_history(self, session_id: str) -> acp_quirks.HistoryGuard | None:
        """For agents with the same-minute load bug: wait or refuse, and back the files up."""
        if "same_minute_load" not in self.ctx.spec.quirks:
            return None
        from acp import RequestError

        env = self._agent_env()
        files = acp_quirks.gemini_session_files(env, session_id)
        minutes = {acp_quirks.created_minute(f) for f in files}
        if acp_quirks.current_minute() in minutes:
            # The minute its file was started (created, or last loaded): loading now would
            # append to that very file and wipe it.
            why = (
                f"{self.name} cannot load session {session_id} before the clock minute turns "
                "(a Gemini CLI bug would destroy its history)"
            )
            wait = 60.0 - time.time() % 60.0
            if wait > self.same_minute_wait:
                raise RequestError(-32603, f"{why}; try again in {wait:.0f} s")
            self.notice(f"{why}; waiting {wait:.0f} s")
            await self._wait_for_minute(wait + 0.5)
        backup_dir = self.ctx.avatar_home / "backups" / self.name
        return acp_quirks.HistoryGuard.take(files, backup_dir)

    async def _wait_for_minute(self, seconds: float) -> None:
        """Sleep until the clock minute turns (a method, so tests need not wait)."""
        await asyncio.sleep(seconds)

    # -- cascade ----------------------------------------------------------------------------

    async def _reopen(self, session_id: str, how: OpenHow | None) -> SessionStarted | list[str]:
        """Load, else resume; the SessionStarted, or why every attempt failed."""
        from acp import RequestError

        failures: list[str] = []
        if self.capabilities.can_load:
            try:
                await self._do_load(session_id)
            except (RequestError, ValidationError) as e:
                failures.append(f"session/load of {session_id} failed: {describe_error(e)}")
            else:
                # Return once the replay is complete (Gemini sends part of it after the load
                # response), so the caller sees the whole history before anything else.
                await self.router.replay_settled()
                return self._started(how or "loaded")
        if self.capabilities.can_resume:
            try:
                await self._do_resume(session_id)
            except (RequestError, ValidationError) as e:
                failures.append(f"session/resume of {session_id} failed: {describe_error(e)}")
            else:
                if failures:
                    self.notice(f"{failures[0]}; resumed it with session/resume instead")
                return self._started(how or "resumed")
        if not self.capabilities.can_load and not self.capabilities.can_resume:
            failures.append(
                f"{self.name} cannot reopen sessions (no session/load or session/resume)"
            )
        return failures

    async def _fallback_new(self, failures: list[str]) -> SessionStarted:
        session_id = await self._do_new()
        await self._apply_model()
        self.notice(f"{'; '.join(failures)}; opened a new session {session_id} instead", "warning")
        return self._started("new")

    async def new_session(self, session_id: str | None = None) -> SessionStarted:
        """`session/new` (ACP agents choose the id; a requested one is reported as ignored)."""
        new_id = await self._do_new()
        if session_id and session_id != new_id:
            self.notice(f"{self.name} chooses its own session ids; opened {new_id}")
        await self._apply_model()
        return self._started("new")

    async def resume_session(self, session_id: str) -> SessionStarted:
        """Reopen by id: load → resume → new (with a notice)."""
        result = await self._reopen(session_id, None)
        if isinstance(result, SessionStarted):
            await self._apply_model()
            return result
        return await self._fallback_new(result)

    async def continue_last(self) -> SessionStarted:
        """Reopen the newest session of this provider in the cwd, else open a new one."""
        latest, failures = await self._latest()
        if latest is None:
            return await self._fallback_new(failures)
        result = await self._reopen(latest.id, "continued")
        if isinstance(result, SessionStarted):
            await self._apply_model()
            return result
        return await self._fallback_new(result)

    async def fork_session(self, session_id: str) -> SessionStarted:
        """`session/fork` where advertised; a failed fork opens a new session (with a notice)."""
        from acp import RequestError

        if not self.capabilities.can_fork:
            raise NotSupportedError(self.name, "forking a session")
        assert self.conn is not None
        conn = self.conn
        try:
            with self._opening_session(ANY_SESSION):
                resp = await self._authed(
                    "session/fork",
                    lambda: conn.fork_session(
                        session_id=session_id,
                        cwd=self._session_cwd(),
                        additional_directories=self._additional_dirs(),
                        mcp_servers=self._mcp_servers(),
                    ),
                )
        except (RequestError, ValidationError) as e:
            return await self._fallback_new(
                [f"session/fork of {session_id} failed: {describe_error(e)}"]
            )
        self.session_id = resp.session_id
        self.config_options = list(resp.config_options or [])
        await self._apply_model()
        return self._started("forked")

    # -- listing ----------------------------------------------------------------------------

    def _store(self) -> SessionStore | None:
        spec = self.ctx.spec.store
        if not spec:
            return None
        try:
            return load_store(spec, self.name, self._agent_env(), self.ctx.avatar_home)
        except ImportError as e:
            self.notice(f"cannot read {self.name} sessions from disk: {e}", "warning")
            return None

    def _lists_from_disk(self) -> bool:
        return "list_from_disk" in self.ctx.spec.quirks or not self.capabilities.can_list

    async def _list_remote(self, cwd: Path | None) -> list[SessionInfo]:
        """Every page of `session/list` (filtered by cwd), as avatar SessionInfo."""
        assert self.conn is not None
        conn = self.conn

        async def page(cursor: str | None) -> Any:
            return await self._authed(
                "session/list",
                lambda: conn.list_sessions(cwd=str(cwd) if cwd else None, cursor=cursor),
            )

        return await list_pages(page, self.name)

    async def _list_disk(self, cwd: Path | None) -> list[SessionInfo] | None:
        store = self._store()
        if store is None:
            return None
        # Readers parse files synchronously; keep the event loop (and the agent's pipes) moving.
        return await asyncio.to_thread(store.list, cwd)

    async def list_sessions(self, cwd: Path | None = None) -> list[SessionInfo]:
        """Sessions in `cwd` (all when None): `session/list`, or the on-disk reader."""
        from acp import RequestError

        if not self._lists_from_disk():
            try:
                return await self._list_remote(cwd)
            except (RequestError, ValidationError) as e:
                disk = await self._list_disk(cwd)
                if disk is None:
                    raise ProviderError(
                        f"{self.name}: session/list failed: {describe_error(e)}"
                    ) from None
                return disk
        return await self._list_disk(cwd) or []

    async def _latest(self) -> tuple[SessionInfo | None, list[str]]:
        """The newest session in the cwd, or why there is none."""
        from acp import RequestError

        cwd = self.ctx.cwd.resolve()
        failures: list[str] = []
        sessions: list[SessionInfo] | None = None
        if self.capabilities.can_list and "list_from_disk" not in self.ctx.spec.quirks:
            try:
                sessions = await self._list_remote(cwd)
            except (RequestError, ValidationError) as e:
                failures.append(f"session/list failed: {describe_error(e)}")
        if sessions is None:
            sessions = await self._list_disk(cwd)
            if sessions is None and not failures:
                failures.append(f"{self.name} cannot list its sessions")
        if sessions is None:
            return None, failures
        # Agents filter by cwd themselves, but not all of them reliably.
        here = [s for s in sessions if s.cwd is None or same_dir(s.cwd, cwd)]
        latest = newest(here)
        if latest is None:
            failures.append(f"no earlier {self.name} session in {cwd}")
        return latest, failures

    async def delete_session(self, session_id: str) -> None:
        """`session/delete` where advertised."""
        if not self.capabilities.can_delete or self.conn is None:
            raise NotSupportedError(self.name, "deleting a session")
        from acp import RequestError

        try:
            # The SDK has no wrapper for this (schema-only) method yet.
            await self._call(
                "session/delete",
                self.conn._conn.send_request("session/delete", {"sessionId": session_id}),
            )
        except RequestError as e:
            raise ProviderError(
                f"{self.name}: deleting {session_id} failed: {describe_error(e)}"
            ) from None
        if self.session_id == session_id:
            self.session_id = None

    # -- model ------------------------------------------------------------------------------

    async def _apply_model(self) -> None:
        model = self.ctx.model
        if not model:
            return
        try:
            await self.set_model(model)
        except (ProviderError, NotSupportedError) as e:
            self.notice(f"model {model!r} not set: {e}", "warning")

    def _model_option(self) -> Any | None:
        for option in self.config_options:
            if getattr(option, "type", None) != "select":
                continue
            if getattr(option, "category", None) == "model" or option.id == "model":
                return option
        return None

    async def set_model(self, model: str) -> None:
        """Switch model through the session's `model` config option (or `session/set_model`)."""
        from acp import RequestError

        if self.conn is None or self.session_id is None:
            raise ProviderError(f"{self.name}: no session open")
        option = self._model_option()
        try:
            if option is not None:
                if option.current_value == model:
                    return
                resp = await self._call(
                    "session/set_config_option",
                    self.conn.set_config_option(
                        config_id=option.id, session_id=self.session_id, value=model
                    ),
                )
                self.config_options = list(resp.config_options or self.config_options)
            else:
                # Gemini and Claude still use the unstable session/set_model.
                await self._call(
                    "session/set_model",
                    self.conn._conn.send_request(
                        "session/set_model", {"sessionId": self.session_id, "modelId": model}
                    ),
                )
        except (RequestError, ValidationError) as e:
            raise ProviderError(
                f"{self.name}: cannot switch to model {model!r}: {describe_error(e)}"
            ) from None
