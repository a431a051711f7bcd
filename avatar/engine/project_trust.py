"""What `avatar trust` covers in one project (docs/design.md §10): its `.avatar.yaml`
(`avatar.engine.config_layers.ProjectConfig`) and the agents' own config in it — every file of
every provider's `project_config` around the project, once, with the providers that read it,
judged against the trust store (`avatar.policy.agent_config`); shown with what each would run
(`avatar.policy.agent_config_runs`), trusted, or forgotten, all together."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.bridges.held_back import own_state
from avatar.policy.agent_config import ConfigFile, project_files, read_whole
from avatar.policy.trust import TrustStore

if TYPE_CHECKING:
    from avatar.engine.config_layers import ProjectConfig
    from avatar.providers.registry import ProviderSpec

#: How trusted a file is, as `--show` says it.
STATES = {
    "trusted": "yes",
    "user": "yes (it is your user config)",
    "changed": "no (it changed since it was trusted)",
    "untrusted": "no",
}
UNREADABLE = "no (it cannot be read whole: never trusted)"


@dataclass(frozen=True)
class AgentFile:
    """One file of the agents' project config, and the providers that read it."""

    file: ConfigFile
    providers: tuple[str, ...]


def agent_files(
    cwd: Path, specs: Iterable[ProviderSpec], store_home: Path, env: Mapping[str, str]
) -> list[AgentFile]:
    """Every file of the `project_config` of `specs` around `cwd`, once, by path."""
    store = TrustStore(store_home)
    user_home = Path(env["HOME"]) if env.get("HOME") else None
    found: dict[Path, tuple[ConfigFile, list[str]]] = {}
    for spec in specs:
        state = partial(own_state, spec, env)
        for f in project_files(cwd, spec.project_config, store, user_home, state):
            found.setdefault(f.path, (f, []))[1].append(spec.name)
    return [AgentFile(f, tuple(names)) for f, names in (found[p] for p in sorted(found))]


@dataclass
class ProjectTrust:
    """A project's `.avatar.yaml` (`config`, None when it has none) and its agents' own config
    files (`files`), with the trust store in `store_home`."""

    config: ProjectConfig | None
    files: list[AgentFile]
    store_home: Path

    @property
    def empty(self) -> bool:
        """Nothing in the project needs trust."""
        return self.config is None and not self.files

    def show(self) -> str:
        """Each file, whether it is trusted and what applies or runs only once it is."""
        blocks = [_show_config(self.config)] if self.config is not None else []
        blocks += [_show_agent_file(a) for a in self.files]
        return "\n".join(blocks)

    def trust(self) -> str:
        """Trust every file as it is now; one line each."""
        lines = []
        if self.config is not None:
            if self.config.state == "user":
                lines.append(f"{self.config.path} is your user config: always trusted")
            else:
                self.config.trust()
                lines.append(f"trusted: {self.config.path}")
        readable = [(a.file.real, a.file.digest) for a in self.files if a.file.digest is not None]
        TrustStore(self.store_home).trust_digests(readable)
        lines += [
            f"trusted: {a.file.path}"
            if a.file.digest is not None
            else f"not trusted: {a.file.path} (it cannot be read whole)"
            for a in self.files
        ]
        return "".join(line + "\n" for line in lines)

    def revoke(self) -> str:
        """Forget every file; one line each."""
        lines = []
        if self.config is not None:
            done = self.config.revoke()
            lines.append(f"{'revoked' if done else 'was not trusted'}: {self.config.path}")
        gone = set(TrustStore(self.store_home).revoke_all([a.file.real for a in self.files]))
        lines += [
            f"{'revoked' if a.file.real in gone else 'was not trusted'}: {a.file.path}"
            for a in self.files
        ]
        return "".join(line + "\n" for line in lines)


def _show_config(config: ProjectConfig) -> str:
    lines = [str(config.path), f"trusted: {STATES[config.state]}"]
    if config.guarded:
        lines.append("applies only when trusted:")
        lines += [f"  {key}: {json.dumps(value)}" for key, value in config.guarded.items()]
    else:
        lines.append("nothing in it needs trust")
    return "".join(line + "\n" for line in lines)


def _show_agent_file(agent: AgentFile) -> str:
    from avatar.policy.agent_config_runs import runs
    from avatar.policy.secrets import SecretDetector

    f = agent.file
    state = STATES[f.state] if f.digest is not None else UNREADABLE
    lines = [str(f.path), f"trusted: {state}", f"read by: {', '.join(agent.providers)}"]
    data = read_whole(f.path) if f.digest is not None else None
    found = runs(f.path, data) if data is not None else None
    if found is None:
        lines.append("may run programs (avatar does not read what)")
    elif not found:
        lines.append("names no program (it can still change what the agent does)")
    else:
        mask = SecretDetector().mask
        lines.append("runs:")
        # JSON strings: a command's escape sequences reach the terminal inert.
        lines += [f"  {where}: {json.dumps(mask(what))}" for where, what in found]
    return "".join(line + "\n" for line in lines)
