"""The engine: avatar's public Python API (DESIGN §8), and the only thing the CLI and REPL call.

It owns the provider registry, the session library (every provider's store) and the active
bridge. Bridges load and start lazily: listing never spawns an agent. A session id is resolved
once, to its provider, and the bridge receives the resolved session. Examples: `examples/`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

from avatar.bridges.base import OpenRequest
from avatar.core.config import Settings, avatar_home
from avatar.core.errors import AvatarError, NotSupportedError, UsageError
from avatar.core.loading import load_class
from avatar.engine.config_layers import project_config
from avatar.engine.conversation import Conversation
from avatar.engine.opening import plan_open
from avatar.engine.settings import SettingsPolicy
from avatar.engine.switching import Switcher, SwitchHow
from avatar.library.actions import LibraryActions
from avatar.library.archive import Archives
from avatar.library.catalog import SessionLibrary
from avatar.policy.permissions import PermissionGate, PermissionHandler
from avatar.providers.facts import CapabilityCache
from avatar.providers.registry import ProviderRegistry, ProviderSpec, shipped
from avatar.sessions.types import SessionInfo, Transcript

if TYPE_CHECKING:
    from avatar.bridges.base import BaseBridge
    from avatar.core.events import BaseEvent, Listener, OpenHow, SessionStarted
    from avatar.engine.settings import SettingsSource
    from avatar.engine.status import EngineStatus


class Engine:
    """One project's agents behind one session API; see the module docstring.

    Build it with `from_config()` (the layered config of DESIGN §4), or directly from
    `Settings` when embedding. A turn's events are what `send()` yields; events outside turns
    reach `subscribe()`d listeners; permission requests reach the handler given to
    `set_permission_handler()`.
    """

    def __init__(
        self,
        settings: Settings,
        cwd: Path,
        *,
        provider: str | None = None,
        env: Mapping[str, str] | None = None,
        home: Path | None = None,
        add_dirs: Sequence[Path] = (),
        source: SettingsSource | None = None,
    ) -> None:
        self.settings = settings
        self.cwd = cwd.resolve()
        self.env: Mapping[str, str] = dict(os.environ if env is None else env)
        self.home = home or avatar_home()
        self.add_dirs = [(self.cwd / d).resolve() for d in add_dirs]
        #: The model asked for (flag, preset, `/model`); None: the provider's own choice.
        self.model: str | None = settings.model
        self.wait_busy = True  # a session another process holds: wait, or fail (`--no-wait`)
        self._bridge: BaseBridge | None = None
        self.session: SessionStarted | None = None
        self._listeners: list[Listener] = []
        self.registry = ProviderRegistry(settings, self.env)
        self.library = SessionLibrary(self.registry, self.home)
        current = lambda: self.session.session_id if self.session else None  # noqa: E731
        actions = LibraryActions(self.library, self.cwd, self.home, self.spec, current, self.delete)
        #: Search, name and prune sessions (DESIGN §8): see `avatar.library.actions`.
        self.search, self.reindex, self.rename = actions.search, actions.reindex, actions.rename
        self.prunable, self.prune = actions.prunable, actions.prune
        self.archives = Archives(self.library)  #: sessions packed to move between machines
        self._gate = PermissionGate(self._emit, settings.permission)
        self._walls_told: set[str] = set()
        self._policy = SettingsPolicy(source, self.home)
        self._requested = self.spec(provider).name if provider else None
        self.untrusted_config = source.untrusted if source else None  #: keys ignored: `notice()`
        self._thread = Conversation(self.library)
        self._switch = Switcher(self, self._thread, self._notice)
        self._listeners.append(self._thread.replayed)  # it keeps the history agents replay

    @classmethod
    def from_config(
        cls,
        cwd: str | Path = ".",
        *,
        provider: str | None = None,
        model: str | None = None,
        preset: str | None = None,
        config_file: Path | None = None,
        permission: str | None = None,
        add_dirs: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
        home: Path | None = None,
        trust: bool = False,
    ) -> Engine:
        """An engine over the layered config, as the `avatar` command builds it; `trust`: apply
        an untrusted project `.avatar.yaml` whole (else see `untrusted_config`)."""
        from avatar.engine.settings import SettingsSource

        root, flags = Path(cwd).resolve(), {"model": model, "permission": permission}
        source = SettingsSource.from_files(
            root, config_file, flags, preset, shipped(), trust=trust, home=home
        )
        settings = source.initial()
        return cls(
            settings, root, provider=provider, env=env, home=home, add_dirs=add_dirs, source=source
        )

    project_config = staticmethod(project_config)

    # ----- providers ----------------------------------------------------------------------

    def providers(self) -> list[ProviderSpec]:
        """Every provider avatar knows: the built-in ones, then those from config."""
        return self.registry.specs()

    def spec(self, name: str) -> ProviderSpec:
        """The provider called `name`; a UsageError lists the known ones."""
        return self.registry.spec(name)

    def default_provider(self) -> str:
        """DESIGN §3: config/preset provider, else native with credentials, else the first CLI."""
        return self.registry.default(self.settings)

    def check_model(self) -> None:
        """A usage error now for a model the chosen provider is known not to offer."""
        if self.model:
            self.registry.check_model(self.chosen_provider(), self.model, self.settings)

    def chosen_provider(self) -> str:
        """The provider of the open session, else the one the next `open()` will use."""
        if self.session is not None:
            return self.session.provider
        return self._requested or self.default_provider()

    # ----- events and permissions ---------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` with every event; returns the function that unsubscribes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def set_permission_handler(self, handler: PermissionHandler | None) -> None:
        """Who answers permission requests under `permission: ask` (None: they are denied)."""
        self._gate.handler = handler

    def _emit(self, event: BaseEvent) -> None:
        for listener in list(self._listeners):
            listener(event)

    def _notice(self, message: str, level: str = "info") -> None:
        from avatar.core.events import Notice

        self._emit(Notice(message=message, level=level))  # type: ignore[arg-type]

    # ----- sessions on disk ---------------------------------------------------------------

    def sessions(self, provider: str | None = None, *, any_cwd: bool = False) -> list[SessionInfo]:
        """Sessions of one provider (every provider when None) in this project (or any
        directory), newest first. No agent is started."""
        name = self.spec(provider).name if provider else None
        return self.library.sessions(name, None if any_cwd else self.cwd)

    def find(self, ref: str, provider: str | None = None) -> SessionInfo:
        """The session whose id is `ref` or starts with it (any provider, any directory)."""
        return self.library.find(ref, self.spec(provider).name if provider else None)

    def transcript(self, session: SessionInfo | str) -> Transcript:
        """The canonical transcript of a session (a listed one, or an id or prefix)."""
        return self.library.transcript(self.library.info(session))

    def export(self, session: SessionInfo | str, fmt: str = "md", to: Path | None = None) -> str:
        """A transcript as `md`, `html` or `json`, secrets masked; with `to`, written there too."""
        from avatar.library.export.render import (  # (loaded when first used, as below)
            render,
            write_export,
        )

        return write_export(to, render(self.transcript(session), fmt, self.registry.secrets()))

    async def delete(self, session: SessionInfo | str) -> SessionInfo:
        """Delete a session: through its agent where the agent offers `session/delete`, else
        its files (or avatar's records of it); returns what was deleted."""
        info = self.library.info(session)
        if self.session is not None and self.session.session_id == info.id:
            raise UsageError("cannot delete the session that is open")
        if self.registry.spec(info.provider).transport == "acp":
            bridge = await self._start(info.provider)
            if await bridge.delete_session(info.id):
                if self.library.keeps_records(info.provider):
                    self.library.delete(info)
                return info
        self.library.delete(info)
        return info

    async def refresh(self, provider: str) -> list[SessionInfo]:
        """`sessions(provider)`, after asking the agent itself (`session/list`, where it has
        it): sessions avatar did not open join its records."""
        name = self.spec(provider).name
        listed = await (await self._start(name)).agent_sessions() or []
        self.library.adopt(name, listed)
        known = self.sessions(name)
        ids = {s.id for s in known}
        return known + [s for s in listed if s.id not in ids]

    def warnings(self) -> list[str]:
        """What the stores skipped while reading (unreadable files and lines)."""
        return self.library.warnings()

    # ----- opening ------------------------------------------------------------------------

    async def open(
        self,
        provider: str | None = None,
        *,
        resume: str | None = None,
        continue_last: bool = False,
        session_id: str | None = None,
        source: str | None = None,
        imported: bool = False,
    ) -> SessionStarted:
        """Open a session: resume `resume` (id or prefix, on the provider owning it), continue
        the newest one, or start one (with id `session_id` where the provider allows), seeded
        with a handoff of session `source` when given (`imported`: its conversation written
        into the provider's own store, where it can be). `provider` defaults to the engine's."""
        name = self.spec(provider).name if provider else self._requested
        if source:
            return await self._switch.open_from(source, name or self.default_provider(), imported)
        return await self._open(
            name, resume=resume, continue_last=continue_last, session_id=session_id
        )

    async def _open(
        self,
        name: str | None,
        *,
        resume: str | None = None,
        continue_last: bool = False,
        session_id: str | None = None,
    ) -> SessionStarted:
        plan = plan_open(
            self.library,
            self.settings,
            name,
            self.default_provider,
            resume=resume,
            continue_last=continue_last,
            session_id=session_id,
        )
        return await self.open_on(plan.provider, plan.request)

    async def new(self, provider: str | None = None) -> SessionStarted:
        """A fresh session on `provider` (default: the current or chosen one)."""
        return await self.open_on(provider or self.chosen_provider(), OpenRequest("new"))

    async def resume(self, ref: str, provider: str | None = None) -> SessionStarted:
        """Resume a session by id or unique prefix, on whichever provider owns it (or on
        `provider`, when given: then another provider's session is a usage error)."""
        return await self._open(self.spec(provider).name if provider else None, resume=ref)

    async def continue_last(self, provider: str | None = None) -> SessionStarted:
        """Open the newest session of `provider` in this project."""
        return await self.open_on(provider or self.chosen_provider(), OpenRequest("continue"))

    async def fork(self, ref: str | None = None, at: int | None = None) -> SessionStarted:
        """Fork a session (default: the open one), whole or to message `at`
        (`avatar.engine.forking`)."""
        from avatar.engine.forking import fork_session

        return await fork_session(self, ref, at)

    async def open_on(
        self, provider: str, request: OpenRequest, how: OpenHow | None = None
    ) -> SessionStarted:
        """Start `provider` and open a session on it as `request` says (a resumed or forked
        session with the settings it was started with, DESIGN §4). An unsupported reopen
        opens a new session, with a notice."""
        name = self.spec(provider).name
        if request.mode in ("resume", "continue", "fork"):
            await self._adopt_settings(name, request.session_id)
        bridge = await self._start(name)
        try:
            started = await bridge.open(request)
        except NotSupportedError as e:
            if request.mode == "new":
                raise
            self._notice(f"{e}; opened a new session instead", "warning")
            started = await bridge.open(OpenRequest("new"))
        if how and started.session_id == request.session_id:  # e.g. a fork opened as a resume
            started.how = how
        self.session = started
        self._gate.session_id = started.session_id
        self.library.opened(name, started.session_id, str(self.cwd), started.model)
        resolved = request.opened(name, started.session_id)  # (its path, not a lookup)
        self._thread.opened(resolved or SessionInfo(started.session_id, name, cwd=str(self.cwd)))
        if request.mode == "resume" and request.session_id not in (None, started.session_id):
            self._switch.recover(name, str(request.session_id), started, request.info)
        if started.how in ("new", "forked"):
            self._remember(fresh=True)
        self._emit(started)
        return started

    async def _start(self, provider: str) -> BaseBridge:
        if self._bridge is not None and self._bridge.name == provider and self._bridge.alive:
            return self._bridge
        await self._stop_bridge()
        from avatar.bridges.base import BaseBridge, BridgeContext  # not needed to list

        spec = self.registry.spec(provider)
        ctx = BridgeContext(
            spec=spec,
            cwd=self.cwd,
            settings=self.settings,
            avatar_home=self.home,
            env=self.registry.env_for(spec),
            additional_dirs=list(self.add_dirs),
            store=self.library.store(provider),
            model=self.model or spec.model,
            system_prompt=self.settings.system_prompt,
            permission=self._gate.decide,
            emit=self._emit,
            wait_busy=self.wait_busy,
        )
        bridge = load_class(spec.bridge, BaseBridge)(ctx)  # type: ignore[type-abstract]
        await bridge.start()
        self._bridge = bridge
        if provider not in self._walls_told:  # what the kernel cannot confine here, once
            from avatar.policy import sandbox  # asyncio and ctypes: not for a listing

            self._walls_told.add(provider)
            for message in sandbox.notices(self.settings.scope.sandbox):
                self._notice(message, "warning")
        if spec.transport != "native":  # what the agent says it can do, for `providers`
            CapabilityCache(self.home).learned(spec, ctx.env, bridge.session_capabilities)
        return bridge

    # ----- per-session settings (DESIGN §4) -----------------------------------------------

    def _remember(self, *, fresh: bool = False) -> None:
        if self.session is not None:
            self._policy.remember(
                self.settings, self.model, self.session.provider, self.session.session_id, fresh
            )

    async def _adopt_settings(self, provider: str, session_id: str | None) -> None:
        def newest() -> str | None:  # continue: the newest session is the one reopened
            found = self.library.sessions(provider, self.cwd)
            return found[0].id if found else None

        adopted = self._policy.adopt(self.settings, session_id or newest)
        if adopted is None:
            return
        if adopted.warning:
            self._notice(adopted.warning, "warning")
        if adopted.settings != self.settings:
            self._use_settings(adopted.settings)
            if self._bridge is not None and self._bridge.name == provider:
                await self._stop_bridge()  # it was started with other settings

    def _use_settings(self, settings: Settings) -> None:
        self.settings = settings
        self.model = settings.model
        self._gate.policy = settings.permission

    # ----- turns --------------------------------------------------------------------------

    async def send(self, prompt: str) -> AsyncIterator[BaseEvent]:
        """Run one turn, yielding its events; opens a new session on the chosen provider
        first when none is open."""
        if self.session is None or self._bridge is None:
            await self.new()
        elif not self._bridge.alive or self._bridge.session_id != self.session.session_id:
            await self._reopen_after_death()  # (listing another agent's sessions replaces it)
        bridge = self._require_bridge()
        async for event in bridge.send(self._thread.outgoing(prompt)):
            self._thread.observe(event)
            yield event
        self._thread.turn_ended(bridge.model_in_use or self.model)

    async def steer(self, text: str) -> bool:
        """Add `text` to the running turn (native); False when the provider cannot, and the
        caller should queue it for the next turn."""
        return self._bridge is not None and await self._bridge.steer(text)

    async def cancel(self) -> None:
        """Interrupt the running turn (it ends with stop reason `cancelled`)."""
        if self._bridge is not None:
            await self._bridge.cancel()

    async def set_model(self, model: str) -> None:
        """Use `model` from the next turn on, and remember it as the session's own."""
        if self._bridge is not None:
            await self._bridge.set_model(model)
        self.model = model
        self._remember()

    async def apply_preset(self, name: str) -> SessionStarted | None:
        """Lay preset `name` over the settings; switches provider (with a handoff) when the
        preset names another. Returns the new session when it switched."""
        self._use_settings(self.settings.apply_preset(name))
        self._remember()
        target = self.settings.provider
        current = self.session.provider if self.session else None
        if target and target != current:
            return await self.switch_provider(target)
        return None

    async def compact(self) -> str:
        """Compact the open session's context; a line saying what happened."""
        return await self._require_bridge().compact()

    def status(self) -> EngineStatus:
        """Provider, model, session and capabilities, as they are now."""
        from avatar.engine.status import describe

        try:
            spec: ProviderSpec | None = self.registry.spec(self.chosen_provider())
        except AvatarError:
            spec = None
        walls = self.walls(spec.name) if spec is not None and self._bridge is not None else None
        pending = self._thread.pending
        return describe(spec, self.model, self._bridge, self.session, pending, walls)

    def walls(self, provider: str) -> str:
        """What the kernel confines for `provider` here: `agent`, `commands`, `off` or
        `unavailable` (`avatar.policy.sandbox.walls`)."""
        from avatar.policy.sandbox import walls  # ctypes and asyncio: not for a listing

        spec = self.registry.spec(provider)
        return walls(self.settings.scope.sandbox, spec.transport, spec.state_dirs)

    # ----- switching provider -------------------------------------------------------------

    def history(self) -> Transcript | None:
        """The open session's conversation (`Conversation.history`); None without one."""
        return self._thread.history()

    async def switch_provider(self, name: str, **how: Unpack[SwitchHow]) -> SessionStarted:
        """Switch mid-project to `name`: back to the session left there (handed what happened
        since) unless `new`, else a new one seeded with a handoff (`SwitchHow` says how)."""
        return await self._switch.to(name, **how)

    async def _reopen_after_death(self) -> None:
        assert self.session is not None
        name, sid = self.session.provider, self.session.session_id
        if self._bridge is None or not self._bridge.alive or self._bridge.name == name:
            self._notice(f"{name} had stopped; restarting it and reopening session {sid}")
        await self._stop_bridge()
        await self.open_on(name, OpenRequest("resume", sid))

    # ----- shutting down ------------------------------------------------------------------

    async def _stop_bridge(self) -> None:
        bridge, self._bridge = self._bridge, None
        if bridge is not None:
            await bridge.stop()

    async def close(self) -> None:
        """Stop the active agent (flushing its session); the engine can open again later."""
        await self._stop_bridge()
        self.session = None
        self._thread.closed()

    def _require_bridge(self) -> BaseBridge:
        if self._bridge is None:
            raise AvatarError("no session is open")
        return self._bridge
