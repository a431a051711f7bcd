"""What switching and forking need of the engine (`SessionHost`): a narrow interface, so
they depend on these few names instead of the whole `Engine` (which implements it)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from avatar.bridges.base import OpenRequest
    from avatar.core.config import Settings
    from avatar.core.events import BaseEvent, OpenHow
    from avatar.engine.open_session import OpenSession
    from avatar.library.catalog import SessionLibrary
    from avatar.policy.secrets import SecretDetector


class SessionHost(Protocol):
    """Open a session on a provider, run one turn, read the open session's conversation,
    and know each provider's model."""

    cwd: Path
    env: Mapping[str, str]
    settings: Settings
    catalog: SessionLibrary
    current: OpenSession | None

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
