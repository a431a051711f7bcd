"""What a cold one-shot remembers of its claude's launch, and from what it was computed, for
the next one to start claude before the rest of avatar loads
(`avatar.bridges.claude.remembered`, docs/startup.md).

The inputs named are those that decide whether the launch holds anything back, and what runs:
the user's config file, each `.avatar.yaml` the project's config may be, the trust store, the
providers' data and avatar's copy of it, each file the program is looked up as, the Node
beside it and the walls' stub; and every place the project's agent config may be, none of
which may exist (a launch holding part of it back is never remembered: it depends on the
files and their trust). The walls themselves (the project's denied and protected paths, the
agent's state) are not inputs: the engine computes them for every start, and a claude started
from memory is adopted only when its walls are exactly those.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.bridges.claude import remembered
from avatar.bridges.claude.argv import mcp_env
from avatar.core.config import project_config_candidates, user_config_path
from avatar.core.errors import AvatarError
from avatar.policy.agent_config import directories
from avatar.policy.kernel import stub
from avatar.policy.trust import TrustStore
from avatar.providers.programs import looked_at
from avatar.providers.registry import data_files

if TYPE_CHECKING:
    from avatar.bridges.claude.launch import ClaudeAhead
    from avatar.bridges.held_back import Holding
    from avatar.bridges.spawning import Spawned
    from avatar.core.config import Settings
    from avatar.providers.registry import ProviderSpec


class Remember:
    """Remember the launch of `avatar [-p asked] chat` in `cwd`, in avatar's `home`."""

    def __init__(self, home: Path, asked: str, cwd: Path) -> None:
        self.home = home
        self.asked = asked
        self.cwd = cwd

    def keep(
        self,
        spec: ProviderSpec,
        settings: Settings,
        started: ClaudeAhead,
        held: Holding,
        env: Mapping[str, str],
    ) -> None:
        """Remember how `started` was started, where it may be (see the module docstring);
        else forget what was remembered here. Nothing for a claude started from memory: its
        inputs are as they were."""
        spawned = started.spawned
        if started.remembered or spawned is None:
            return
        try:
            self._keep(spec, settings, started, spawned, held, env)
        except (OSError, AvatarError, stub.StubError):  # (for speed: never a failed start)
            remembered.forget(self.home, self.asked, self.cwd)

    def _keep(
        self,
        spec: ProviderSpec,
        settings: Settings,
        started: ClaudeAhead,
        spawned: Spawned,
        held: Holding,
        env: Mapping[str, str],
    ) -> None:
        inputs = None if held.held or mcp_env(settings.mcp_servers) else self.inputs(spec, env)
        argv, walls = started.launch.argv, started.launch.walls
        if inputs is None or _secret(argv, spawned.env, env):
            remembered.forget(self.home, self.asked, self.cwd)
            return
        tool = str(stub.executable()) if spawned.spec is not None else None
        tmp = str(walls.tmpdir) if walls is not None else ""
        remembered.remember(
            self.home,
            self.asked,
            self.cwd,
            inputs,
            argv,
            spawned.env,
            spawned.spec,
            tool,
            tmp,
            provider=spec.name,
        )

    def inputs(self, spec: ProviderSpec, env: Mapping[str, str]) -> list[str] | None:
        """The files the launch of `spec` in `cwd` was computed from (the module docstring);
        None when the project has agent config of `spec`'s."""
        user_home = Path(env["HOME"]) if env.get("HOME") else None
        agent_config = [
            os.path.join(d, entry.rstrip("/"))
            for d in directories(self.cwd, user_home)
            for entry in spec.project_config
        ]
        if any(os.path.lexists(p) for p in agent_config):
            return None
        found = looked_at(spec.executable or "claude", env.get("PATH"))
        out = [*agent_config, *found, os.path.join(os.path.dirname(found[-1]), "node")]
        out += [str(p) for p in project_config_candidates(self.cwd)]
        out += [str(user_config_path()), str(TrustStore(self.home).path)]
        out += [str(p) for p in data_files()]
        if stub.available() is None:
            out.append(str(stub.executable()))
        return out


def _secret(argv: list[str], started: Mapping[str, str], env: Mapping[str, str]) -> bool:
    """Does anything remembered (the argv, what the environment adds) hold a secret?"""
    from avatar.policy.secrets import SecretDetector, is_secret_name

    added = {k: v for k, v in started.items() if os.environ.get(k) != v}
    detector = SecretDetector(env, started)
    text = "\n".join([*argv, *added.values()])
    return any(is_secret_name(k) for k in added) or detector.mask(text) != text
