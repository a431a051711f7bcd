"""The engine: avatar's public Python API (docs/design.md §8), and the only thing the CLI, the REPL
and the server call.

It is built from nouns with their own state, each a public attribute:

- `library` (`avatar.library.library.Library`): every provider's sessions in this project —
  list, find, read, search, rename, export, delete, prune, archives;
- `agent` (`avatar.engine.agent.Agent`): the one agent that runs and the session open on it
  (`current`, an `avatar.engine.open_session.OpenSession`: its bridge, model and
  conversation) — opening (`new`, `resume`, `continue_last`, `fork`), the agent's own list;
- `registry` (`avatar.providers.registry.ProviderRegistry`): the providers and their secrets;
- `models` (`avatar.engine.model_choice.ModelChoice`): the model asked for on each provider;
- `checkpoints` (`avatar.engine.checkpoints.Checkpoints`): the project's files recorded around
  every turn, and a session rewound to before one (docs/design.md §12).

The engine itself keeps which provider is chosen, the config in force (presets, the settings a
session was started with), the events' listeners and the permission handler, and offers the
names of the docs/design.md §8 sketch (`open`, `send`, `sessions`, …) as thin delegates of its
nouns. Bridges load and start lazily: listing never spawns an agent, nor imports one (the
`agent` is built on first use). A session id is resolved once, to its provider, and the
bridge receives the resolved session. Examples: `examples/`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from avatar.core.config import McpServer, Settings, avatar_home
from avatar.core.errors import AvatarError
from avatar.engine.ahead import StartedAhead
from avatar.engine.config_layers import project_config
from avatar.engine.model_choice import ModelChoice
from avatar.engine.settings import SettingsPolicy, SettingsSource
from avatar.library import worktree_place
from avatar.providers.registry import ProviderRegistry, shipped

if TYPE_CHECKING:
    from avatar.bridges.acp.shared import AgentPool
    from avatar.bridges.held_back import Holding
    from avatar.core.events import BaseEvent, Listener
    from avatar.core.prompts import Prompt
    from avatar.engine.agent import Agent
    from avatar.engine.checkpoints import Checkpoints
    from avatar.engine.checkpoints import Rewound as Rewound  # (what a rewind returns: public)
    from avatar.engine.config_layers import ProjectConfig
    from avatar.engine.open_session import OpenSession
    from avatar.engine.project_trust import ProjectTrust
    from avatar.engine.shell import ShellResult
    from avatar.engine.status import EngineStatus
    from avatar.engine.switching import SwitchHow
    from avatar.library.catalog import Catalog
    from avatar.library.checkpoints.turns import Turn as Turn  # (a turn and its checkpoints)
    from avatar.library.library import Deleted as Deleted  # (what `delete` returns: public)
    from avatar.library.library import DeleteHow, Library
    from avatar.library.library import SearchHow as SearchHow  # (what `search` takes: public)
    from avatar.library.search.hits import SearchHit
    from avatar.library.worktrees import Worktree
    from avatar.policy.permissions import PermissionHandler
    from avatar.providers.registry import ProviderSpec
    from avatar.sessions.types import SessionInfo, Transcript


class Engine:
    """One project's agents behind one session API; see the module docstring.

    Build it with `from_config()` (the layered config of docs/design.md §4), or directly from
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
        self.worktree: Path | None = worktree_place.avatar_worktree(self.cwd)
        self.wait_busy = True  # a session another process holds: wait, or fail (`--no-wait`)
        #: Only one turn on a new session will run (`chat`): its agent may be started ahead
        #: (`launch_ahead`).
        self.one_shot = False
        #: Running ACP agents this engine's sessions may run on beside other engines' (the
        #: server gives its engines one: `avatar.bridges.acp.shared`); None: its own agents.
        self.agent_pool: AgentPool | None = None
        self._listeners: list[Listener] = []
        #: The providers: their table, their environment, the secret detector.
        self.registry = ProviderRegistry(settings, self.env)
        self._catalog: Catalog | None = None  # (`catalog` and `library`: built on first use)
        self._library: Library | None = None
        self._handler: PermissionHandler | None = None
        self._agent: Agent | None = None  # (built when a session first needs an agent)
        self._checkpoints: Checkpoints | None = None
        #: The agent `launch_ahead` started, until a session takes it.
        self.ahead = StartedAhead()
        self._policy = SettingsPolicy(source, self.home)
        self._requested = self.registry.spec(provider).name if provider else None
        self.untrusted_config = source.untrusted if source else None  #: keys ignored: `notice()`
        #: `--trust`: the project's files are trusted for this run (`from_config(trust=)`).
        self.trust = source.trust if source else False
        #: The model asked for on each provider; the flag's (or preset's) until a provider
        #: is opened, then it is that provider's alone (`avatar.engine.model_choice`).
        self.models = ModelChoice(settings.model, self.registry, lambda: self.settings, self.env)

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

    #: The project's `.avatar.yaml` (`avatar.engine.config_layers.project_config`): the CLI's
    #: door to it for `avatar trust`, before any engine is built.
    project_config = staticmethod(project_config)

    def project_trust(self, config: ProjectConfig | None) -> ProjectTrust:
        """What `avatar trust` covers in the project: `config` (its `.avatar.yaml`, from
        `project_config`) and the agents' own config files around it (every provider's
        `project_config` data), judged against the trust store."""
        from avatar.engine.project_trust import ProjectTrust, agent_files

        files = agent_files(self.cwd, self.registry.specs(), self.home, self.env)
        return ProjectTrust(config, files, self.home)

    @property
    def catalog(self) -> Catalog:
        """The stores and avatar's records of the sessions (`avatar.library.catalog`). Built
        on first use, as the library: a one-shot starts its agent before loading them."""
        if self._catalog is None:
            from avatar.library.catalog import Catalog

            self._catalog = Catalog(self.registry, self.home)
        return self._catalog

    @property
    def library(self) -> Library:
        """Every provider's sessions (docs/design.md §8): see `avatar.library.library`."""
        if self._library is None:
            from avatar.library.library import Library

            self._library = Library(self.catalog, self.cwd, self.home, self._open_id, self._delete)
        return self._library

    @property
    def agent(self) -> Agent:
        """The agent that runs and the session open on it (`avatar.engine.agent`), built on
        first use (a listing never needs it)."""
        if self._agent is None:
            from avatar.engine.agent import Agent, EngineHooks  # bridges, handoff: not to list

            hooks = EngineHooks(
                self._emit, self._notice, self._adopt_settings, self._remember, self._move_to
            )
            self._agent = Agent(self, hooks, self._handler)
        return self._agent

    @property
    def checkpoints(self) -> Checkpoints:
        """The project's files before and after every turn, and rewinding a session's files
        and conversation to before one (`avatar.engine.checkpoints`, docs/design.md §12)."""
        if self._checkpoints is None:
            from avatar.engine.checkpoints import Checkpoints

            self._checkpoints = Checkpoints(self, lambda: self.agent, self._notice)
        return self._checkpoints

    @property
    def current(self) -> OpenSession | None:
        """The open session (its agent, model and conversation); None when none is open."""
        return self._agent.current if self._agent is not None else None

    def twin(self) -> Engine:
        """An engine built as this one was (settings, project, environment, directories,
        config source, provider asked for), nothing started: the server's warm agents."""
        made = type(self)(
            self.settings,
            self.cwd,
            provider=self._requested,
            env=self.env,
            home=self.home,
            source=self._policy.source,
        )
        made.add_dirs = list(self.add_dirs)  # (already resolved against this cwd)
        made.wait_busy = self.wait_busy
        made.trust = self.trust
        made.agent_pool = self.agent_pool
        return made

    # ----- providers and models -----------------------------------------------------------

    @property
    def requested_provider(self) -> str | None:
        """The provider asked for by name (`-p`), None when none was: a session resumed by id
        then runs on its own provider."""
        return self._requested

    def chosen_provider(self) -> str:
        """The provider of the open session, else the one the next `open()` will use: the
        one asked for, else the default of docs/design.md §3 (config or preset, else native
        with credentials, else the first CLI found)."""
        if self.current is not None:
            return self.current.provider
        return self._requested or self.registry.default(self.settings)

    @property
    def model(self) -> str | None:
        """The model asked for on the open session (else on the provider `open()` will use);
        None: the provider's own choice."""
        if self.current is not None:
            return self.current.model
        return self.models.of(self.chosen_provider())

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
        self._handler = handler
        if self._agent is not None:
            self._agent.gate.handler = handler

    def _emit(self, event: BaseEvent) -> None:
        for listener in list(self._listeners):
            listener(event)

    def _notice(self, message: str, level: str = "info") -> None:
        from avatar.core.events import Notice  # (the event classes: not for a listing)

        self._emit(Notice(message=message, level=level))  # type: ignore[arg-type]

    def _open_id(self) -> str | None:
        return self.current.session_id if self.current is not None else None

    async def _delete(self, info: SessionInfo, how: DeleteHow) -> Deleted:
        return await self.agent.delete(info, how)

    # ----- the library (thin delegates of `library`, the names of docs/design.md §8) -------

    def sessions(self, provider: str | None = None, *, any_cwd: bool = False) -> list[SessionInfo]:
        """`library.sessions`: sessions of one provider (every provider when None) in this
        project (or any directory), newest first. No agent is started."""
        return self.library.sessions(provider, any_cwd=any_cwd)

    def find(self, ref: str, provider: str | None = None) -> SessionInfo:
        """`library.find`: the session whose id is `ref` or starts with it."""
        return self.library.find(ref, provider)

    def transcript(self, session: SessionInfo | str) -> Transcript:
        """`library.transcript`: the canonical transcript of a session."""
        return self.library.transcript(session)

    def search(self, query: str, **how: Unpack[SearchHow]) -> list[SearchHit]:
        """`library.search`: sessions whose messages hold every word of `query`."""
        return self.library.search(query, **how)

    def rename(self, ref: SessionInfo | str, name: str) -> SessionInfo:
        """`library.rename`: name a session."""
        return self.library.rename(ref, name)

    def export(self, session: SessionInfo | str, fmt: str = "md", to: Path | None = None) -> str:
        """`library.export`: a transcript as `md`, `html` or `json`, secrets masked."""
        return self.library.export(session, fmt, to)

    async def delete(
        self, session: SessionInfo | str, *, forget: bool = False, keep_copy: bool = False
    ) -> Deleted:
        """`library.delete`: through its agent, else its store (`avatar.engine.deleting`);
        `forget`: avatar's record only; `keep_copy`: keep avatar's copy of the turns.
        Returns what was done."""
        return await self.library.delete(session, forget=forget, keep_copy=keep_copy)

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
        into the provider's own store, where it can be). `provider` defaults to the engine's.
        `engine.agent` has the other ways to open: `new`, `resume`, `continue_last`, `fork`."""
        name = self.registry.spec(provider).name if provider else self._requested
        if self.one_shot:
            import asyncio

            asyncio.get_running_loop().call_soon(self._ready_for_turn)
        if source:
            default = name or self.registry.default(self.settings)
            return await self.agent.open_from(source, default, imported)
        return await self.agent.open(
            name, resume=resume, continue_last=continue_last, session_id=session_id
        )

    def _ready_for_turn(self) -> None:
        """What a one-shot's turn needs besides its agent, loaded while the agent boots (the
        open awaits it): the checkpoints' code, avatar's records of the sessions, the secrets
        detector the turn's title is masked with and the thread the files are recorded in.
        Loaded once the session is open, they held the loop up, and with it the agent's first
        updates, which the first prompt waits out (`avatar.bridges.acp.stream`). A failure
        here is the turn's to meet and say."""
        import asyncio
        import contextlib

        from avatar.policy.secrets import process_detector

        with contextlib.suppress(Exception):
            self.checkpoints  # noqa: B018  (its code loads)
            self.catalog.records().all()
            process_detector()
            asyncio.get_running_loop().run_in_executor(None, int)  # (its thread starts)

    async def enter_worktree(self, name: str | None = None) -> Worktree:
        """Make a git worktree of this repository (`avatar.library.worktrees.create`; `name`:
        a generated one when None) and run the next sessions in it: it becomes the engine's
        cwd, the project root the sandbox lets agents write in. The open session is closed."""
        from avatar.library import worktrees

        made = worktrees.create(self.cwd, name)
        await self._move_to(made.path)
        return made

    async def _move_to(self, path: Path) -> None:
        await self.close()  # (its agent runs in the directory left)
        self.cwd = self.library.cwd = self.worktree = path.resolve()

    def add_mcp_servers(self, servers: Mapping[str, Mapping[str, Any]]) -> None:
        """Hand these stdio MCP servers (name → `command`, `args`, `env`), besides the
        config's `mcp_servers`, to the agents started from now on: those an ACP client gives
        `avatar acp` for its session (the user's own, as the user config's are)."""
        from dataclasses import replace

        added = {
            name: McpServer(
                command=str(given["command"]),
                args=[str(a) for a in given.get("args") or []],
                env={str(k): str(v) for k, v in (given.get("env") or {}).items()},
            )
            for name, given in servers.items()
        }
        self.settings = replace(self.settings, mcp_servers={**self.settings.mcp_servers, **added})

    # ----- per-session settings (docs/design.md §4) -----------------------------------------------

    def _remember(self, fresh: bool = False) -> None:
        if self.current is not None:
            self._policy.remember(
                self.settings,
                self.current.model,
                self.current.provider,
                self.current.session_id,
                fresh,
            )

    def _adopt_settings(self, provider: str, session_id: str | None) -> bool:
        def newest() -> str | None:  # continue: the newest session is the one reopened
            found = self.catalog.sessions(provider, self.cwd)
            return found[0].id if found else None

        adopted = self._policy.adopt(self.settings, session_id or newest)
        if adopted is None:
            return False
        if adopted.warning:
            self._notice(adopted.warning, "warning")
        if adopted.settings == self.settings:
            return False
        self._use_settings(adopted.settings, provider)
        return True

    def _use_settings(self, settings: Settings, provider: str) -> None:
        if settings.model != self.settings.model:  # (the flag's model stays where it is)
            self.models.use(provider, settings.model)
        self.settings = settings
        self.models.settings_changed()  # (the settings may name another default)
        if self._agent is not None:
            self._agent.gate.policy = settings.permission

    # ----- turns (thin delegates of the open session) -------------------------------------

    async def send(self, prompt: str | Prompt) -> AsyncIterator[BaseEvent]:
        """Run one turn on the open session, yielding its events; opens a new session on the
        chosen provider first when none is open, and reopens it when its agent died.

        `prompt` is the text, or a `Prompt` with images attached (`avatar.core.prompts`);
        an agent that takes no images refuses them with a `NotSupportedError`."""
        async for event in self.agent.send(prompt):
            yield event

    async def steer(self, text: str) -> bool:
        """Add `text` to the running turn (native); False when the provider cannot, and the
        caller should queue it for the next turn."""
        return self.current is not None and await self.current.steer(text)

    async def cancel(self) -> None:
        """Interrupt the running turn (it ends with stop reason `cancelled`)."""
        if self._agent is not None:
            await self._agent.cancel()

    @property
    def turn_elsewhere(self) -> bool:
        """True while a turn another client started runs on the session (an engine on a live
        session of the server: `avatar.server.remote`); `cancel()` interrupts it too. An
        engine of its own has no other clients: False."""
        return False

    async def set_model(self, model: str) -> None:
        """Use `model` from the next turn on (on the open session, else on the provider the
        next `open()` will use), and remember it as the session's own."""
        if self.current is not None:
            await self.current.set_model(model)
        self.models.use(self.chosen_provider(), model)
        self._remember()

    async def apply_preset(self, name: str) -> OpenSession | None:
        """Lay preset `name` over the settings (its model, else the config's, replaces the
        one asked for); switches provider (with a handoff) when the preset names another.
        Returns the new session when it switched."""
        settings = self.settings.apply_preset(name)
        current = self.current.provider if self.current else None
        target = settings.provider if settings.provider != current else None
        self._use_settings(settings, target or self.chosen_provider())
        self.models.use(target or self.chosen_provider(), settings.model)
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

    async def shell(self, command: str, show: Callable[[str], None]) -> ShellResult:
        """Run the user's own `command` (`!command` in the REPL) in the project, inside the
        commands' walls, passing its output to `show` as it comes (`avatar.engine.shell`)."""
        from avatar.engine.shell import run_shell  # the walls: not for a listing

        scope, add_dirs = self.settings.scope, self.add_dirs
        return await run_shell(
            command, scope=scope, cwd=self.cwd, add_dirs=add_dirs, env=self.env, show=show
        )

    def user_program(self, name: str) -> str | None:
        """`name` as the user's `PATH` finds it outside every directory the walls let agents
        write (the project, the added directories): a program avatar runs for the user
        outside the walls, such as the REPL's editor and pager (`avatar.policy.own_programs`)."""
        from avatar.policy.own_programs import program_outside

        search = self.env.get("PATH", os.defpath)
        return program_outside(name, search, [self.cwd, *self.add_dirs])

    def status(self) -> EngineStatus:
        """Provider, model, session and capabilities, as they are now."""

        try:
            spec: ProviderSpec | None = self.registry.spec(self.chosen_provider())
        except AvatarError:
            spec = None
        return self.agent.status(spec)

    def walls(self, provider: str) -> str:
        """What the kernel confines for `provider` here: `agent`, `commands`, `off` or
        `unavailable` (`avatar.policy.sandbox.walls`)."""
        from avatar.policy.sandbox import walls  # ctypes and asyncio: not for a listing

        spec = self.registry.spec(provider)
        mode = self.settings.scope.sandbox
        return walls(mode, spec.transport, spec.state_dirs, spec.state_guessed)

    # ----- switching provider -------------------------------------------------------------

    async def switch_provider(self, name: str, **how: Unpack[SwitchHow]) -> OpenSession:
        """Switch mid-project to `name`: back to the session left there (handed what happened
        since) unless `new`, else a new one seeded with a handoff (`SwitchHow` says how). The
        next session runs `name`'s own model unless `model` names one."""
        return await self.agent.switch(self.registry.spec(name).name, **how)

    # ----- starting ahead -----------------------------------------------------------------

    def launch_ahead(self, remember: bool = False) -> None:
        """Start now, before the event loop runs, the agent the next `open()` of a new one-shot
        session (`one_shot`) will run on, so that it boots while the caller loads the rest of
        what a turn needs (a cold `avatar chat`: benchmarks/oneshot.py). An ACP agent's bridge
        adopts it, and Claude's bridge a claude started on a new session of its own
        (`avatar.engine.ahead`); one no session took is stopped by the next open or
        `close()`. With `remember` (a plain `avatar [-p NAME] chat PROMPT` in the process's
        directory), claude's launch is remembered for the next such one-shot here, to start
        before avatar loads (`avatar.bridges.claude.remembered`)."""
        if self.one_shot:
            from avatar.policy.kernel.stub import probe_soon

            probe_soon()  # (what the kernel allows: asked while the walls' code loads)
            from avatar.bridges.held_back import holding

            spec = self.registry.spec(self.chosen_provider())
            env = self.registry.env_for(spec)

            def held(cwd: Path) -> Holding:
                return holding(spec, cwd, self.home, env, trusted_run=self.trust)

            keep = None
            if remember and not self.trust:
                from avatar.engine.remember import Remember

                keep = Remember(self.home, self._requested or "", self.cwd)
            self.ahead.start(spec, self.settings, self.cwd, self.add_dirs, env, held, keep)

    # ----- shutting down ------------------------------------------------------------------

    async def close(self) -> None:
        """Stop the active agent (flushing its session); the engine can open again later."""
        self.ahead.stop()
        if self._checkpoints is not None:
            await self._checkpoints.settled()  # (the files after the last turn: recorded)
        if self._agent is not None:
            await self._agent.close()
