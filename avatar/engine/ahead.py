"""The agent a one-shot starts before the rest of avatar loads (`Engine.launch_ahead`): started
from the config alone, without the event loop, and handed to the session that opens on it, or
stopped."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.core.errors import AvatarError
from avatar.providers.registry import ACP_BRIDGE

if TYPE_CHECKING:
    from avatar.bridges.acp.launch import Ahead
    from avatar.bridges.held_back import Holding
    from avatar.core.config import Settings
    from avatar.providers.registry import ProviderSpec


class StartedAhead:
    """At most one agent started ahead, and for which provider."""

    def __init__(self) -> None:
        self._started: tuple[str, Ahead] | None = None

    def start(
        self,
        spec: ProviderSpec,
        settings: Settings,
        cwd: Path,
        additional_dirs: Sequence[Path],
        env: Mapping[str, str],
        holding: Callable[[Path], Holding],
    ) -> None:
        """Start `spec`'s agent now, where its bridge can adopt it (an ACP agent's),
        without what `holding(cwd)` holds back of the project's config; nothing when one was
        started already, or it cannot start (the open then says why)."""
        if self._started is not None or spec.bridge != ACP_BRIDGE:
            return
        from avatar.bridges.acp.launch import AgentLaunch, Ahead

        try:
            launch = AgentLaunch.of(spec, settings, cwd, additional_dirs, env, holding(cwd))
            self._started = (spec.name, Ahead(launch, launch.spawn(cwd)))
        except AvatarError:  # (the open says why)
            return

    def take(self, provider: str) -> Ahead | None:
        """The agent started for `provider`, once; one started for another is stopped."""
        started, self._started = self._started, None
        if started is None:
            return None
        if started[0] != provider:  # (another provider opened instead: it is not needed)
            started[1].stop()
            return None
        return started[1]

    def stop(self) -> None:
        """Stop the one no session took."""
        started, self._started = self._started, None
        if started is not None:
            started[1].stop()
