"""What switching and forking need of the engine (`SessionHost`), and what its running half
needs (`EngineCore`, `avatar.engine.agents`): narrow interfaces, so they depend on these few
names instead of the whole `Engine` (which implements both)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from avatar.bridges.acp.launch import Ahead
    from avatar.bridges.acp.shared import AgentPool
    from avatar.bridges.base import OpenRequest
    from avatar.bridges.claude.launch import ClaudeAhead
    from avatar.core.config import Settings
    from avatar.core.events import BaseEvent, Listener, OpenHow
    from avatar.engine.open_session import OpenSession
    from avatar.library.catalog import SessionLibrary
    from avatar.policy.secrets import SecretDetector
    from avatar.providers.registry import ProviderRegistry, ProviderSpec


class SessionHost(Protocol):
    """Open a session on a provider, run one turn, read the open session's conversation,
    and know each provider's model."""

    cwd: Path
    env: Mapping[str, str]
    settings: Settings
    catalog: SessionLibrary

    @property
    def current(self) -> OpenSession | None:
        """The open session; None when none is."""
        ...

    def model_for(self, provider: str) -> str | None:
        """The model asked for on `provider` (None: its own choice)."""
        ...

    def use_model(self, provider: str, model: str | None) -> None:
        """Ask for `model` on `provider` from its next session on."""
        ...

    def default_model(self, provider: str) -> str | None:
        """The model `provider` runs when none is asked for, where avatar knows it."""
        ...

    def secrets(self) -> SecretDetector:
        """The detector masking handoffs and avatar's copies of turns."""
        ...

    async def open_on(
        self, provider: str, request: OpenRequest, how: OpenHow | None = None
    ) -> OpenSession:
        """Start `provider` and open a session on it as `request` says."""
        ...

    def send(self, prompt: str) -> AsyncIterator[BaseEvent]:
        """Run one turn on the open session."""
        ...


class EngineCore(SessionHost, Protocol):
    """What the running half of the engine (`avatar.engine.agents.Agents`) reads of it."""

    home: Path
    add_dirs: list[Path]
    worktree: Path | None
    registry: ProviderRegistry
    one_shot: bool
    wait_busy: bool
    #: `--trust`: the project's files are trusted for this run.
    trust: bool
    #: Running agents shared with other engines (the server's), or None.
    agent_pool: AgentPool | None

    def spec(self, name: str) -> ProviderSpec:
        """The provider called `name`."""
        ...

    def default_provider(self) -> str:
        """The provider used when none is named."""
        ...

    def chosen_provider(self) -> str:
        """The provider of the open session, else the one the next open will use."""
        ...

    def claim_model(self, provider: str) -> None:
        """The model asked for before any provider opened becomes `provider`'s."""
        ...

    def take_ahead(self, provider: str) -> Ahead | ClaudeAhead | None:
        """The agent started ahead for `provider`'s one-shot (`Engine.launch_ahead`), once."""
        ...

    def walls(self, provider: str) -> str:
        """What the kernel confines for `provider` here."""
        ...

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` with every event."""
        ...
