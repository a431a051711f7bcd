"""The engine: avatar's public Python API (DESIGN §8), and the only thing the CLI and REPL call.

It is built from nouns with their own state: `library` (every provider's sessions,
`avatar.library.library`) and the open session (`current`, `avatar.engine.open_session`: its
agent, model and conversation). The engine keeps which session is open, opens and switches,
and offers the names of DESIGN §8 as thin delegates. Bridges load and start lazily: listing
never spawns an agent. A session id is resolved once, to its provider, and the bridge receives
the resolved session. Examples: `examples/`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

from avatar.bridges.base import BaseBridge, BridgeContext, OpenRequest
from avatar.core.config import Settings, avatar_home
from avatar.core.errors import AvatarError
from avatar.core.loading import load_class
from avatar.engine.adopting import copy_replayed
from avatar.engine.config_layers import project_config
from avatar.engine.conversation import Conversation
from avatar.engine.deleting import delete_session
from avatar.engine.forking import fork_session
from avatar.engine.library_names import LibraryNames
from avatar.engine.numbers import Meter
from avatar.engine.open_session import OpenSession
from avatar.engine.opening import open_with, plan_open
from avatar.engine.settings import SettingsPolicy, SettingsSource
from avatar.engine.status import EngineStatus, describe
from avatar.engine.switching import Switcher, SwitchHow
from avatar.library import worktrees
from avatar.library.catalog import SessionLibrary
from avatar.library.library import DeleteHow, Library
from avatar.policy.permissions import PermissionGate, PermissionHandler
from avatar.providers.facts import CapabilityCache, configured_model
from avatar.providers.registry import ProviderRegistry, ProviderSpec, shipped
from avatar.sessions.types import SessionInfo, Transcript

if TYPE_CHECKING:
    from avatar.core.events import BaseEvent, Listener, OpenHow, SessionStarted
    from avatar.library.worktrees import Worktree
    from avatar.policy.secrets import SecretDetector


class Engine(LibraryNames):
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
        #: The avatar git worktree sessions run in (`enter_worktree`, or a resumed session's).
        self.worktree: Path | None = worktrees.avatar_worktree(self.cwd)
        self.wait_busy = True  # a session another process holds: wait, or fail (`--no-wait`)
        #: Only one turn on a new session will run (`chat`): a new session opens on the
        #: provider's `one_shot_bridge` (an ACP agent without the SDK).
        self.one_shot = False
        #: The open session (its agent, model and conversation); None when none is open.
        self.current: OpenSession | None = None
        self._bridge: BaseBridge | None = None  # the running agent (open session or not)
        self._listeners: list[Listener] = []
        self.registry = ProviderRegistry(settings, self.env)
        self.catalog = SessionLibrary(self.registry, self.home)  #: the stores and records
        #: Every provider's sessions (DESIGN §8): see `avatar.library.library`.
        self.library = Library(self.catalog, self.cwd, self.home, self._open_id, self._delete)
        self._gate = PermissionGate(self._emit, settings.permission)
        self._walls_told: set[str] = set()
        self._policy = SettingsPolicy(source, self.home)
        self._requested = self.spec(provider).name if provider else None
        self.untrusted_config = source.untrusted if source else None  #: keys ignored: `notice()`
        #: The model asked for on each provider; the flag's (or preset's) until a provider
        #: is opened, then it is that provider's alone (`model_for`).
        self._models: dict[str, str | None] = {}
        self._unbound_model: str | None = settings.model
        self._native_default: str | None = None  # (resolved when first shown)
        self._next = self._conversation()  # collects what an agent replays while opening
        self._switch = Switcher(self, self._notice)
        self._listeners.append(lambda event: self._next.replayed(event))
        self.meter = Meter()  #: the status line's numbers (`status().numbers`)
        self._listeners.append(self.meter.observe)

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

        root, flags = Path(cwd).resolve(), {"model": model, "permission": permission}
        source = SettingsSource.from_files(
            root, config_file, flags, preset, shipped(), trust=trust, home=home
        )
        settings = source.initial()
        return cls(
            settings, root, provider=provider, env=env, home=home, add_dirs=add_dirs, source=source
        )

    project_config = staticmethod(project_config)

    def twin(self) -> Engine:
        """An engine built as this one was (settings, project, environment, directories,
        config source, provider asked for), nothing started: the server's warm agents."""
        made = type(self)(self.settings, self.cwd, provider=self._requested, env=self.env,
                          home=self.home, source=self._policy.source)  # fmt: skip
        made.add_dirs, made.wait_busy = list(self.add_dirs), self.wait_busy
        return made

    # ----- providers and models -----------------------------------------------------------

    def providers(self) -> list[ProviderSpec]:
        """Every provider avatar knows: the built-in ones, then those from config."""
        return self.registry.specs()

    def spec(self, name: str) -> ProviderSpec:
        """The provider called `name`; a UsageError lists the known ones."""
        return self.registry.spec(name)

    def default_provider(self) -> str:
        """DESIGN §3: config/preset provider, else native with credentials, else the first CLI."""
        return self.registry.default(self.settings)

    def chosen_provider(self) -> str:
        """The provider of the open session, else the one the next `open()` will use."""
        if self.current is not None:
            return self.current.provider
        return self._requested or self.default_provider()

    @property
    def session(self) -> SessionStarted | None:
        """How the open session was opened (its id, provider, model); None when none is."""
        return self.current.started if self.current is not None else None

    @property
    def model(self) -> str | None:
        """The model asked for on the open session (else on the provider `open()` will use);
        None: the provider's own choice."""
        if self.current is not None:
            return self.current.model
        return self.model_for(self.chosen_provider())

    @model.setter
    def model(self, model: str | None) -> None:
        self.use_model(self.chosen_provider(), model)

    def model_for(self, provider: str) -> str | None:
        """The model asked for on `provider`: the one set there (`-m` or a preset for the
        first provider opened, the session's settings, `set_model`), else None (its own)."""
        name = self.spec(provider).name
        return self._models.get(name, self._unbound_model)

    def default_model(self, provider: str) -> str | None:
        """The model `provider` runs when none is asked for, where avatar can tell before the
        agent starts: its table's `model`, the one its own settings name, or the native
        agent's default (`provider/id`)."""
        spec = self.spec(provider)
        if spec.model or spec.transport != "native":
            return spec.model or configured_model(spec, self.env)
        if self._native_default is None:
            from avatar.native.models import ModelResolver  # the catalog: not for a listing

            try:
                resolver = ModelResolver.from_settings(self.settings, self.env)
                self._native_default = resolver.resolve(None).full_id
            except AvatarError:  # no credentials for any model: nothing to name
                self._native_default = ""
        return self._native_default or None

    def secrets(self) -> SecretDetector:
        """The detector masking every output (made when first needed: listing never does)."""
        return self.registry.secrets()

    def use_model(self, provider: str, model: str | None) -> None:
        """Ask for `model` on `provider` from its next session on (None: its own choice)."""
        self._models[self.spec(provider).name] = model
        self._unbound_model = None  # a model asked for is one provider's, never the next's

    def check_model(self) -> None:
        """A usage error now for a model the chosen provider is known not to offer."""
        if self.model:
            self.registry.check_model(self.chosen_provider(), self.model, self.settings)

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
        from avatar.core.events import Notice  # (the event classes: not for a listing)

        self._emit(Notice(message=message, level=level))  # type: ignore[arg-type]

    def _open_id(self) -> str | None:
        return self.current.session_id if self.current is not None else None

    async def _delete(self, info: SessionInfo, how: DeleteHow) -> SessionInfo:
        return await delete_session(self, info, how)

    async def refresh(self, provider: str) -> list[SessionInfo]:
        """`sessions(provider)`, after asking the agent itself (`session/list`, where it has
        it): sessions avatar did not open join its records, with what the agent replays of
        them as avatar's copy (`avatar.engine.adopting`)."""
        name = self.spec(provider).name
        listed = await (await self._start(name)).agent_sessions() or []
        await copy_replayed(self, name, self.catalog.adopt(name, listed))
        known = self.sessions(name)
        ids = {s.id for s in known}
        return known + [s for s in listed if s.id not in ids]

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
    ) -> OpenSession:
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
    ) -> OpenSession:
        plan = plan_open(
            self.catalog,
            self.settings,
            name,
            self.default_provider,
            resume=resume,
            continue_last=continue_last,
            session_id=session_id,
        )
        there = plan.request.info.worktree if plan.request.info else None
        if there and Path(there) != self.cwd:  # a worktree's session resumes in its worktree
            if Path(there).is_dir():
                await self._move_to(Path(there))
            else:
                self._notice(f"its worktree {there} is gone: resuming in {self.cwd}", "warning")
        return await self.open_on(plan.provider, plan.request)

    async def enter_worktree(self, name: str | None = None) -> Worktree:
        """Make a git worktree of this repository (`avatar.library.worktrees.create`; `name`:
        a generated one when None) and run the next sessions in it: it becomes the engine's
        cwd, the project root the sandbox lets agents write in. The open session is closed."""
        made = worktrees.create(self.cwd, name)
        await self._move_to(made.path)
        return made

    async def _move_to(self, path: Path) -> None:
        await self.close()  # (its agent runs in the directory left)
        self.cwd = self.library.cwd = self.worktree = path.resolve()

    async def new(self, provider: str | None = None) -> OpenSession:
        """A fresh session on `provider` (default: the current or chosen one)."""
        return await self.open_on(provider or self.chosen_provider(), OpenRequest("new"))

    async def resume(self, ref: str, provider: str | None = None) -> OpenSession:
        """Resume a session by id or unique prefix, on whichever provider owns it (or on
        `provider`, when given: then another provider's session is a usage error)."""
        return await self._open(self.spec(provider).name if provider else None, resume=ref)

    async def continue_last(self, provider: str | None = None) -> OpenSession:
        """Open the newest session of `provider` in this project."""
        return await self.open_on(provider or self.chosen_provider(), OpenRequest("continue"))

    async def fork(
        self, ref: str | None = None, at: int | None = None, *, from_copy: bool = False
    ) -> OpenSession:
        """Fork a session (default: the open one), whole or to message `at`; `from_copy`:
        where the agent cannot fork, a new session seeded with the whole history
        (`avatar.engine.forking`)."""
        return await fork_session(self, ref, at, from_copy)

    async def open_on(
        self, provider: str, request: OpenRequest, how: OpenHow | None = None
    ) -> OpenSession:
        """Start `provider` and open a session on it as `request` says (a resumed or forked
        session with the settings it was started with, DESIGN §4). An unsupported reopen
        opens a new session, with a notice. Internal: `open()` and its siblings resolve
        what to open; the switcher and forks use this."""
        name = self.spec(provider).name
        if name not in self._models:  # the flag's model becomes this provider's
            self.use_model(name, self._unbound_model)
        if request.mode in ("resume", "continue", "fork"):
            await self._adopt_settings(name, request.session_id)
        bridge = await self._start(
            name, one_shot=self.one_shot and request.mode == "new", replace=False
        )
        try:
            started = await open_with(bridge, request, self._notice)
        except BaseException:
            if bridge is not self._bridge:  # a failed switch: the agent that ran runs on
                with contextlib.suppress(Exception):
                    await bridge.stop()
            raise
        if bridge is not self._bridge:
            await self._stop_bridge()
            self._bridge = bridge
        if how and started.session_id == request.session_id:  # e.g. a fork opened as a resume
            started.how = how
        thread, self._next = self._next, self._conversation()
        self.current = OpenSession(started, bridge, thread, self._models.get(name))
        self._gate.session_id = started.session_id
        self.catalog.opened(name, started.session_id, str(self.cwd), started.model)
        if self.worktree is not None:
            self.catalog.worktree(name, started.session_id, self.worktree)
        resolved = request.opened(name, started.session_id)  # (its path, not a lookup)
        thread.opened(resolved or SessionInfo(started.session_id, name, cwd=str(self.cwd)))
        if request.mode == "resume" and request.session_id not in (None, started.session_id):
            self._switch.recover(name, str(request.session_id), started, thread, request.info)
        if started.how in ("new", "forked"):
            self._remember(fresh=True)
        self._emit(started)
        return self.current

    def _conversation(self) -> Conversation:
        thread = Conversation(self.catalog)
        thread.redact = lambda text: self.secrets().mask(text)  # no secret in copies
        return thread

    async def _start(
        self, provider: str, *, one_shot: bool = False, replace: bool = True
    ) -> BaseBridge:
        """`provider`'s agent, started unless it runs (`one_shot`: its one-shot bridge).
        Unless `replace`, another provider's agent that runs is not stopped: the caller puts
        this one in its place when of use."""
        old = self._bridge
        if old is not None and old.name == provider and old.alive:
            return old
        if replace or old is None or old.name == provider or not old.alive:
            await self._stop_bridge()
        spec = self.registry.spec(provider)
        bridge = self.bridge_for(provider, one_shot=one_shot)
        await bridge.start()  # (a start that fails leaves nothing running)
        if self._bridge is None:
            self._bridge = bridge
        if provider not in self._walls_told:  # what the kernel cannot confine here, once
            from avatar.policy import sandbox  # asyncio and ctypes: not for a listing

            self._walls_told.add(provider)
            for message in sandbox.notices(self.settings.scope.sandbox):
                self._notice(message, "warning")
        if spec.transport != "native":  # what the agent says it can do, for `providers`
            CapabilityCache(self.home).learned(spec, bridge.ctx.env, bridge.session_capabilities)
        return bridge

    async def running(self, provider: str) -> BaseBridge:
        """The bridge to `provider`, started when it is not running."""
        return await self._start(provider)

    def bridge_for(self, provider: str, *, one_shot: bool = False) -> BaseBridge:
        """A bridge to `provider`, not started (`_start` starts one and keeps it); `one_shot`:
        the provider's one-shot bridge (`ProviderSpec.one_shot_bridge`)."""
        spec = self.registry.spec(provider)
        ctx = BridgeContext(
            spec=spec,
            cwd=self.cwd,
            settings=self.settings,
            avatar_home=self.home,
            env=self.registry.env_for(spec),
            additional_dirs=list(self.add_dirs),
            store=self.catalog.store(provider),
            model=self.model_for(provider) or spec.model,
            system_prompt=self.settings.system_prompt,
            permission=self._gate.decide,
            emit=self._emit,
            wait_busy=self.wait_busy,
        )
        path = spec.one_shot_bridge if one_shot else spec.bridge
        return load_class(path, BaseBridge)(ctx)  # type: ignore[type-abstract]

    # ----- per-session settings (DESIGN §4) -----------------------------------------------

    def _remember(self, *, fresh: bool = False) -> None:
        if self.current is not None:
            self._policy.remember(
                self.settings,
                self.current.model,
                self.current.provider,
                self.current.session_id,
                fresh,
            )

    async def _adopt_settings(self, provider: str, session_id: str | None) -> None:
        def newest() -> str | None:  # continue: the newest session is the one reopened
            found = self.catalog.sessions(provider, self.cwd)
            return found[0].id if found else None

        adopted = self._policy.adopt(self.settings, session_id or newest)
        if adopted is None:
            return
        if adopted.warning:
            self._notice(adopted.warning, "warning")
        if adopted.settings != self.settings:
            self._use_settings(adopted.settings, provider)
            if self._bridge is not None and self._bridge.name == provider:
                await self._stop_bridge()  # it was started with other settings

    def _use_settings(self, settings: Settings, provider: str) -> None:
        if settings.model != self.settings.model:  # (the flag's model stays where it is)
            self.use_model(provider, settings.model)
        self.settings = settings
        self._native_default = None  # (the settings may name another default)
        self._gate.policy = settings.permission

    # ----- turns (thin delegates of the open session) -------------------------------------

    async def send(self, prompt: str) -> AsyncIterator[BaseEvent]:
        """Run one turn on the open session, yielding its events; opens a new session on the
        chosen provider first when none is open, and reopens it when its agent died."""
        if self.current is None:
            await self.new()
        elif self._bridge is not self.current.bridge or not self.current.alive:
            await self._reopen_after_death()  # (listing another agent's sessions replaces it)
        assert self.current is not None
        self.meter.begin_turn()
        async for event in self.current.send(prompt):
            self.meter.observe(event)
            yield event

    async def steer(self, text: str) -> bool:
        """Add `text` to the running turn (native); False when the provider cannot, and the
        caller should queue it for the next turn."""
        return self.current is not None and await self.current.steer(text)

    async def cancel(self) -> None:
        """Interrupt the running turn (it ends with stop reason `cancelled`)."""
        if self.current is not None:
            await self.current.cancel()

    async def set_model(self, model: str) -> None:
        """Use `model` from the next turn on (on the open session, else on the provider the
        next `open()` will use), and remember it as the session's own."""
        if self.current is not None:
            await self.current.set_model(model)
        self.use_model(self.chosen_provider(), model)
        self._remember()

    async def apply_preset(self, name: str) -> OpenSession | None:
        """Lay preset `name` over the settings (its model, else the config's, replaces the
        one asked for); switches provider (with a handoff) when the preset names another.
        Returns the new session when it switched."""
        settings = self.settings.apply_preset(name)
        current = self.current.provider if self.current else None
        target = settings.provider if settings.provider != current else None
        self.settings = settings
        self._native_default = None  # (the settings may name another default)
        self._gate.policy = settings.permission
        self.use_model(target or self.chosen_provider(), settings.model)
        if self.current is not None and target is None:
            self.current.model = settings.model
        self._remember()
        if target:
            return await self.switch_provider(target)
        return None

    async def compact(self) -> str:
        """Compact the open session's context; a line saying what happened."""
        if self.current is None:
            raise AvatarError("no session is open")
        return await self.current.compact()

    def history(self) -> Transcript | None:
        """The open session's conversation (`OpenSession.history`); None without one."""
        return self.current.history() if self.current is not None else None

    def status(self) -> EngineStatus:
        """Provider, model, session and capabilities, as they are now."""

        try:
            spec: ProviderSpec | None = self.registry.spec(self.chosen_provider())
        except AvatarError:
            spec = None
        bridge = self._bridge if spec is not None and self._bridge is not None else None
        if bridge is not None and spec is not None and bridge.name != spec.name:
            bridge = None  # (an agent started to list or delete is not the chosen one)
        walls = self.walls(spec.name) if spec is not None and bridge is not None else None
        pending = self.current.conversation.pending if self.current is not None else None
        model = self.model_for(spec.name) if spec is not None else None
        if model is None and spec is not None and bridge is None:
            model = self.default_model(spec.name)  # what the first prompt will run
        return describe(spec, model, bridge, self.session, pending, walls, self.meter.numbers)

    def walls(self, provider: str) -> str:
        """What the kernel confines for `provider` here: `agent`, `commands`, `off` or
        `unavailable` (`avatar.policy.sandbox.walls`)."""
        from avatar.policy.sandbox import walls  # ctypes and asyncio: not for a listing

        spec = self.registry.spec(provider)
        return walls(self.settings.scope.sandbox, spec.transport, spec.state_dirs)

    # ----- switching provider -------------------------------------------------------------

    async def switch_provider(self, name: str, **how: Unpack[SwitchHow]) -> OpenSession:
        """Switch mid-project to `name`: back to the session left there (handed what happened
        since) unless `new`, else a new one seeded with a handoff (`SwitchHow` says how). The
        next session runs `name`'s own model unless `model` names one."""
        return await self._switch.to(self.spec(name).name, **how)

    async def _reopen_after_death(self) -> None:
        assert self.current is not None
        name, sid = self.current.provider, self.current.session_id
        pending = self.current.conversation.pending
        if self._bridge is None or not self._bridge.alive or self._bridge.name == name:
            self._notice(f"{name} had stopped; restarting it and reopening session {sid}")
        await self._stop_bridge()
        reopened = await self.open_on(name, OpenRequest("resume", sid))
        if pending:  # what was handed over and not sent yet still opens the next prompt
            reopened.conversation.hand_over(pending)

    # ----- shutting down ------------------------------------------------------------------

    async def _stop_bridge(self) -> None:
        bridge, self._bridge = self._bridge, None
        if bridge is not None:
            await bridge.stop()

    async def close(self) -> None:
        """Stop the active agent (flushing its session); the engine can open again later."""
        await self._stop_bridge()
        if self.current is not None:
            self.current.conversation.closed()
        self.current = None
