"""What an ACP agent is started with, computed without the event loop: its environment (the
provider's, with what its quirks add), its command (the program resolved), the scope of its file
and terminal callbacks, the kernel's walls around it with the agent's own mode in its
environment where it takes one there, and how it starts without the project config it may not
use yet (`avatar.bridges.held_back`). The full bridge, the one-shot bridge and a start ahead of
the loop (`Engine.launch_ahead`) compute it here, the same way."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from avatar.bridges import spawning
from avatar.bridges.acp.fs import FileAccess
from avatar.bridges.held_back import Holding
from avatar.core.config import Settings
from avatar.core.errors import ProviderError
from avatar.policy import sandbox
from avatar.policy.sandbox import Sandbox
from avatar.providers.programs import find_executable
from avatar.providers.registry import ProviderSpec


def claude_executable(settings: Settings, env: Mapping[str, str]) -> str | None:
    """The installed `claude`: config `providers.claude`, then PATH, then bridges/."""
    cfg = settings.provider_config("claude")
    candidates: list[str] = []
    if cfg is not None:
        if cfg.executable:
            candidates.append(cfg.executable)
        if cfg.command:
            candidates.append(cfg.command[0])
    candidates.append("claude")
    for program in candidates:
        found = find_executable(program, path=env.get("PATH"))
        if found:
            return found
    return None


def quirk_env(spec: ProviderSpec, settings: Settings, env: Mapping[str, str]) -> dict[str, str]:
    """Environment additions the provider's quirks call for."""
    extra: dict[str, str] = {}
    if "use_installed_claude" in spec.quirks and not env.get("CLAUDE_CODE_EXECUTABLE"):
        claude = claude_executable(settings, env)
        if claude:
            extra["CLAUDE_CODE_EXECUTABLE"] = claude
    return extra


def agent_env(spec: ProviderSpec, settings: Settings, env: Mapping[str, str]) -> dict[str, str]:
    """The agent's environment: `env` (the provider's, merged by the engine; empty: this
    process's with the spec's), plus its quirks'."""
    out = dict(env) if env else {**os.environ, **spec.env}
    out.update(quirk_env(spec, settings, out))
    return out


def agent_argv(spec: ProviderSpec, env: dict[str, str]) -> list[str]:
    """The command to run, its program resolved (config path, PATH, bridges/)."""
    if not spec.command:
        raise ProviderError(
            f"{spec.name}: no command configured (set providers.{spec.name}.command)"
        )
    program = spec.command[0]
    found = find_executable(program, path=env.get("PATH"))
    if found is None:
        hint = f"; install it: {spec.install_hint}" if spec.install_hint else ""
        raise ProviderError(
            f"{spec.name}: {program} not found (looked in config, PATH and "
            f"bridges/node_modules/.bin){hint}"
        )
    return [found, *spec.command[1:]]


@dataclass
class AgentLaunch:
    """One agent start's environment, command, callbacks' scope, walls and what of its
    project config it starts without (`holding`)."""

    spec: ProviderSpec
    env: dict[str, str]
    argv: list[str]
    files: FileAccess
    walls: Sandbox | None
    #: The agent runs inside avatar's kernel walls.
    walled: bool
    #: The agent's own mode avatar asks for (`mode`), None for none.
    mode: str | None
    holding: Holding

    @classmethod
    def of(
        cls,
        spec: ProviderSpec,
        settings: Settings,
        cwd: Path,
        additional_dirs: Sequence[Path],
        env: Mapping[str, str],
        holding: Holding,
    ) -> AgentLaunch:
        """The start of `spec`'s agent in `cwd`, without what `holding` holds back (a
        ProviderError when its program is missing, or when the walls cannot hold back what
        they must)."""
        env_out = agent_env(spec, settings, env)
        argv = [*agent_argv(spec, env_out), *holding.args]
        files = FileAccess(
            cwd,
            list(additional_dirs),
            settings.scope,
            missing_reads_empty="missing_file_empty" in spec.quirks,
        )
        walls = sandbox.for_agent(
            files.policy,
            spec.state_dirs,
            env_out,
            spec.state_protected,
            spec.state_projects,
            holding.covered,
            guessed=spec.state_guessed,
        )
        holding.check(spec.name, cwd, walls, files.policy.sandbox_mode)
        walled = walls is not None and sandbox.support().walls
        mode = agent_mode(spec, settings, walled)
        return cls(spec, env_out, argv, files, walls, walled, mode, holding)

    def agent_env(self) -> dict[str, str]:
        """What the agent's process gets: the environment, its mode where it takes one there
        and the switch that holds back its project config where that is one (the agent's
        only: not its terminals' commands)."""
        out = {**self.env, **self.holding.env}
        if self.spec.mode_env and self.mode:
            out[self.spec.mode_env] = self.mode
        return out

    def spawn(self, cwd: Path) -> spawning.Spawned:
        """Start the agent (inside its walls)."""
        spec = self.spec
        env = self.agent_env()
        return spawning.spawn(spec.name, self.argv, env, cwd, spec.install_hint, self.walls)


@dataclass
class Ahead:
    """An agent the engine started before the event loop ran (`Engine.launch_ahead`): how,
    and its process, for the one-shot bridge to adopt."""

    launch: AgentLaunch
    spawned: spawning.Spawned

    def stop(self) -> None:
        """End it (no session adopted it)."""
        spawning.kill(self.spawned)


def agent_mode(spec: ProviderSpec, settings: Settings, walled: bool) -> str | None:
    """The agent's own mode to set: the one in which it asks before changing anything, so
    avatar's scope and policy decide (claude-agent-acp starts in one that asks nothing)."""
    if walled and spec.walled_mode and settings.permission == "allow":
        return spec.walled_mode  # its own sandbox cannot run inside the walls
    return spec.permission_mode
