"""The agent a one-shot starts before the rest of avatar loads (`Engine.launch_ahead`): started
from the config alone, without the event loop, and handed to the session that opens on it, or
stopped. An ACP agent (its bridge adopts it), or claude on a new session of its own
(`avatar.bridges.claude.launch`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.core.errors import AvatarError
from avatar.providers.programs import find_executable
from avatar.providers.registry import ACP_BRIDGE

if TYPE_CHECKING:
    from avatar.bridges.acp.launch import Ahead
    from avatar.bridges.claude.launch import ClaudeAhead
    from avatar.bridges.held_back import Holding
    from avatar.core.config import Settings
    from avatar.engine.remember import Remember
    from avatar.providers.registry import ProviderSpec


class StartedAhead:
    """At most one agent started ahead, and for which provider."""

    def __init__(self) -> None:
        self._started: tuple[str, Ahead | ClaudeAhead] | None = None

    def start(
        self,
        spec: ProviderSpec,
        settings: Settings,
        cwd: Path,
        additional_dirs: Sequence[Path],
        env: Mapping[str, str],
        holding: Callable[[Path], Holding],
        remember: Remember | None = None,
    ) -> None:
        """Start `spec`'s agent now, where its bridge can adopt it (an ACP agent's, or
        claude), without what `holding(cwd)` holds back of the project's config; nothing when
        one was started already, or it cannot start (the open then says why). Claude's
        launch is remembered for the next cold one-shot where `remember` says how
        (`avatar.bridges.claude.remembered`)."""
        if self._started is not None:
            return
        started: Ahead | ClaudeAhead | None
        try:
            if spec.transport == "stream-json":
                held = holding(cwd)
                started = _claude(spec, settings, cwd, additional_dirs, env, held)
                if started is not None and remember is not None:
                    remember.keep(spec, settings, started, held, env)
            elif spec.bridge == ACP_BRIDGE:
                from avatar.bridges.acp.launch import AgentLaunch, Ahead

                launch = AgentLaunch.of(spec, settings, cwd, additional_dirs, env, holding(cwd))
                started = Ahead(launch, launch.spawn(cwd))
            else:
                return
        except AvatarError:  # (the open says why)
            return
        if started is not None:
            self._started = (spec.name, started)

    def take(self, provider: str) -> Ahead | ClaudeAhead | None:
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


def _claude(
    spec: ProviderSpec,
    settings: Settings,
    cwd: Path,
    additional_dirs: Sequence[Path],
    env: Mapping[str, str],
    held: Holding,
) -> ClaudeAhead | None:
    """Claude started on a new session of its own, with the model the session will ask for
    (the flag's, else the provider's): the bridge adopts it only if it would start the same."""
    from avatar.bridges.claude import remembered
    from avatar.bridges.claude.launch import ClaudeAhead, ClaudeLaunch, fresh_session
    from avatar.bridges.claude.state import Fresh

    early = remembered.take(spec.name)
    try:
        program = find_executable(spec.executable or "claude", env.get("PATH"))
        if program is None:
            return None
        session = Fresh(early.session) if early is not None else fresh_session()
        launch = ClaudeLaunch.of(
            spec,
            settings,
            program,
            cwd=cwd,
            env=env,
            model=settings.model or spec.model,
            system_prompt=settings.system_prompt,
            add_dirs=additional_dirs,
            held=held,
            session_args=session.argv(),
        )
        if early is not None:
            adopted, early = ClaudeAhead.adopt(launch, early), None  # (stopped unless adopted)
            if adopted is not None:
                return adopted
    finally:
        if early is not None:  # (this start failed before it was looked at)
            early.stop()
    return ClaudeAhead.spawn(spec.name, launch, spec.install_hint)
