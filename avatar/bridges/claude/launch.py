"""What a `claude -p` stream-json process is started with, computed without the event loop: its
command line (the session's arguments last), its environment, the kernel's walls around it and
what of the project's config it starts without (`avatar.bridges.held_back`); and a claude
started before anyone asked for it (`ClaudeAhead`), on a new session of its own.

Claude Code writes nothing of a session before its first turn, so a process started on a
fresh `--session-id` and never prompted leaves no session behind. A cold one-shot starts its
claude so, right after the config is read (`Engine.launch_ahead`: it boots while the rest of
avatar loads), and the server's warm claude engine starts the next one-shot's so
(`ClaudeBridge.warm_up`); the bridge adopts it when it was started as the bridge would start
it now, and stops it otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.bridges import spawning
from avatar.bridges.claude.argv import build_argv, mcp_env
from avatar.bridges.claude.state import Fresh
from avatar.core.ids import new_uuid
from avatar.policy import sandbox
from avatar.policy.scope import ScopePolicy

if TYPE_CHECKING:
    from avatar.bridges.claude.process import ClaudeProcess
    from avatar.bridges.claude.remembered import Early
    from avatar.bridges.held_back import Holding
    from avatar.core.config import Settings
    from avatar.policy.sandbox import Sandbox
    from avatar.providers.registry import ProviderSpec


@dataclass
class ClaudeLaunch:
    """One start of claude in `cwd`: `argv` ends with the session's arguments."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    walls: Sandbox | None
    held: Holding

    @classmethod
    def of(
        cls,
        spec: ProviderSpec,
        settings: Settings,
        executable: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        model: str | None,
        system_prompt: str | None,
        add_dirs: Sequence[Path],
        held: Holding,
        session_args: list[str],
    ) -> ClaudeLaunch:
        """The start of `spec`'s claude (`env`: the engine's environment for it, empty for
        this process's) on the session `session_args` name; a ProviderError when the walls
        cannot hold back what they must."""
        argv = build_argv(
            spec.command or ("claude",),
            executable,
            settings=settings,
            provider=spec.name,
            model=model,
            system_prompt=system_prompt,
            add_dirs=[str(d) for d in add_dirs],
            session_args=session_args,
            held_back=held.args,
        )
        base = dict(env) if env else dict(os.environ)
        # Exactly this (plus the spec's, and the MCP env values and headers `--mcp-config`
        # refers to, kept off the argv).
        full = {**base, **spec.env, **mcp_env(settings.mcp_servers), **held.env}
        policy = ScopePolicy(settings.scope, cwd, add_dirs)
        walls = sandbox.for_agent(
            policy,
            spec.state_dirs,
            full,
            spec.state_protected,
            spec.state_projects,
            held.covered,
            guessed=spec.state_guessed,
        )
        held.check(spec.name, cwd, walls, policy.sandbox_mode)
        return cls(argv, full, cwd, walls, held)

    def same_as(self, other: ClaudeLaunch) -> bool:
        """Would `other` start the same claude (the walls follow from the rest)?"""
        return (self.argv, self.env, self.cwd, set(self.held.covered)) == (
            other.argv,
            other.env,
            other.cwd,
            set(other.held.covered),
        )


@dataclass
class ClaudeAhead:
    """A claude started ahead on a new session of its own (`session`): without the event loop
    (`spawned`, for a cold one-shot) or in it (`process`, the server's warm engine)."""

    session: Fresh
    launch: ClaudeLaunch
    spawned: spawning.Spawned | None = None
    process: ClaudeProcess | None = None
    #: Started from memory (`avatar.bridges.claude.remembered`), before the launch was known.
    remembered: bool = False

    @classmethod
    def spawn(cls, name: str, launch: ClaudeLaunch, install_hint: str) -> ClaudeAhead:
        """Start `launch` now, without the event loop (its session: the last `--session-id`
        of its argv)."""
        session = Fresh(launch.argv[launch.argv.index("--session-id") + 1])
        started = spawning.spawn(
            name, launch.argv, launch.env, launch.cwd, install_hint, launch.walls
        )
        return cls(session, launch, spawned=started)

    @classmethod
    def adopt(cls, launch: ClaudeLaunch, early: Early) -> ClaudeAhead | None:
        """The claude started from memory (`avatar.bridges.claude.remembered`), when it was
        started exactly as `launch` would start it; else it is stopped (None)."""
        started = spawning.adopt(launch.argv, launch.env, launch.cwd, launch.walls, early)
        if started is None:
            return None
        return cls(Fresh(early.session), launch, spawned=started, remembered=True)

    def stop(self) -> None:
        """End one no session took and the loop never read (a process in the loop is stopped
        by its owner)."""
        if self.spawned is not None:
            spawning.kill(self.spawned)
            self.spawned = None


def fresh_session() -> Fresh:
    """A new session id for claude to start on."""
    return Fresh(new_uuid())
