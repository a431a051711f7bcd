"""The narrow sides the engine's parts see of each other, so each depends on a few names
instead of a whole class: `EngineCore` (what the engine is: its project, config, providers,
stores and models; `Engine` is one), `Opener` (what switching, forking, adopting and rewinding
need of the engine's agent: the open session, opening one, a turn; `avatar.engine.agent.Agent`
is one) and `TurnRecorder` (what the agent calls around each turn: `engine.checkpoints`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from avatar.bridges.acp.shared import AgentPool
    from avatar.bridges.base import OpenRequest
    from avatar.core.config import Settings
    from avatar.core.events import BaseEvent, Listener, OpenHow
    from avatar.engine.ahead import StartedAhead
    from avatar.engine.model_choice import ModelChoice
    from avatar.engine.open_session import OpenSession
    from avatar.library.catalog import Catalog
    from avatar.providers.registry import ProviderRegistry


class TurnRecorder(Protocol):
    """What records the project's files around each turn (`avatar.engine.checkpoints`)."""

    async def before_turn(self, session: OpenSession, prompt: str) -> None:
        """Before a turn of `session` (`prompt`: what the user sent)."""
        ...

    async def after_turn(self) -> None:
        """After it."""
        ...

    def abandon(self) -> None:
        """The turn was stopped from outside (avatar is leaving): nothing more is recorded."""
        ...


class EngineCore(Protocol):
    """What the engine's parts read of the engine (see the module docstring)."""

    cwd: Path
    env: Mapping[str, str]
    settings: Settings
    home: Path
    add_dirs: list[Path]
    worktree: Path | None
    registry: ProviderRegistry
    models: ModelChoice
    #: The agent a one-shot started before the rest of avatar loaded (`Engine.launch_ahead`).
    ahead: StartedAhead
    one_shot: bool
    wait_busy: bool
    #: `--trust`: the project's files are trusted for this run.
    trust: bool
    #: Running agents shared with other engines (the server's), or None.
    agent_pool: AgentPool | None

    @property
    def catalog(self) -> Catalog:
        """The stores and avatar's records of the sessions."""
        ...

    @property
    def checkpoints(self) -> TurnRecorder:
        """The project's files recorded around each turn (`avatar.engine.checkpoints`)."""
        ...

    def chosen_provider(self) -> str:
        """The provider of the open session, else the one the next open will use."""
        ...

    def walls(self, provider: str) -> str:
        """What the kernel confines for `provider` here."""
        ...

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` with every event."""
        ...


class Opener(Protocol):
    """Open a session on a provider, run one turn, and read the session open (see the module
    docstring)."""

    @property
    def current(self) -> OpenSession | None:
        """The open session; None when none is."""
        ...

    async def open_on(
        self, provider: str, request: OpenRequest, how: OpenHow | None = None
    ) -> OpenSession:
        """Start `provider` and open a session on it as `request` says."""
        ...

    def send(self, prompt: str) -> AsyncIterator[BaseEvent]:
        """Run one turn on the open session."""
        ...
