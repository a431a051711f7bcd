"""The layered configuration (docs/design.md §4, §10), merged: built-in defaults < the user file <
the project's `.avatar.yaml` < environment < command-line flags.

The user file (`-c FILE`, `$AVATAR_CONFIG`, `~/.config/avatar/config.yaml`) is the user's own
and always applies whole. The project file is the nearest `.avatar.yaml` from the working
directory up to the home directory; it is read once (the bytes hashed are the bytes parsed)
and, unless trusted — `avatar trust` recorded its hash, `--trust` is given for this run, or it
*is* the user file — applies only as far as `avatar.policy.trust.restrict` lets a file nobody
vouched for: keys that would run a program or widen what agents may touch are ignored, and
`ProjectConfig.notice()` says which.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from avatar.core.config import (
    Scope,
    Settings,
    avatar_home,
    check_preset_providers,
    deep_merge,
    find_project_config,
    load_file,
    parse_settings,
    read_file,
    user_config_path,
)
from avatar.policy.trust import Ignored, TrustStore, restrict

Key = tuple[Any, ...]  # a key's path in a config file, e.g. ("presets", "x", "provider")
ProjectState = Literal["trusted", "changed", "untrusted", "user"]
"""How a project file stands: trusted (these bytes), changed since it was trusted, never
trusted, or it is the user's own config file (always trusted)."""


@dataclass
class ProjectConfig:
    """The project's `.avatar.yaml`, read once: where, its bytes, its keys, how far trusted."""

    path: Path
    raw: bytes
    data: dict[str, Any]
    state: ProjectState
    #: The keys (and values) that apply only once the file is trusted.
    guarded: Ignored = field(default_factory=dict)
    #: The file as a file nobody trusted applies (`data` without `guarded`).
    restricted: dict[str, Any] = field(default_factory=dict)
    home: Path | None = None  # avatar's data dir holding the trust store
    lines: dict[Key, int] = field(default_factory=dict)  # the line of each key, for errors

    @property
    def real(self) -> Path:
        """The absolute real path the trust store knows the file by."""
        return Path(os.path.realpath(self.path))

    @property
    def trusted(self) -> bool:
        """True when the whole file applies without `--trust`."""
        return self.state in ("trusted", "user")

    def _store(self) -> TrustStore:
        return TrustStore(self.home or avatar_home())

    def trust(self) -> None:
        """Record these bytes as trusted (`avatar trust`)."""
        self._store().trust(self.real, self.raw)
        if self.state != "user":
            self.state = "trusted"

    def revoke(self) -> bool:
        """Forget the file's trust (`avatar trust --revoke`); False when it had none."""
        done = self._store().revoke(self.real)
        if self.state != "user":
            self.state = "untrusted"
        return done

    def notice(self) -> str:
        """The one line saying which keys were ignored and how to trust the file."""
        why = "changed since it was trusted" if self.state == "changed" else "is not trusted"
        keys = ", ".join(self.guarded)
        return (
            f"{self.path} {why}: ignored {keys}; run `avatar trust` to apply them "
            "(or --trust for this run)"
        )


def _trusted_base(user: dict[str, Any]) -> dict[str, Any]:
    """The configuration of the trusted layers as plain data: defaults with the user file."""
    return deep_merge(asdict(Settings()), user)


def read_project(
    cwd: Path,
    user_path: Path,
    user: dict[str, Any],
    home: Path | None = None,
) -> ProjectConfig | None:
    """The project file of `cwd` (None when there is none), read, checked and judged against
    the trusted layers (`user`: the user file's keys, read from `user_path`)."""
    found = find_project_config(cwd)
    if found is None:
        return None
    raw = read_file(found)
    if os.path.realpath(found) == os.path.realpath(user_path):
        return ProjectConfig(found, raw, user, "user", restricted=user, home=home)
    lines: dict[Key, int] = {}
    data = load_file(found, raw, lines)
    restricted, guarded = restrict(data, _trusted_base(user), asdict(Scope()))
    state = TrustStore(home or avatar_home()).state(Path(os.path.realpath(found)), raw)
    return ProjectConfig(found, raw, data, state, guarded, restricted, home, lines)


def project_config(
    cwd: Path, *, config_file: Path | None = None, home: Path | None = None
) -> ProjectConfig | None:
    """The project file `cwd` uses (None when there is none), judged against the user file
    (`config_file`, else `$AVATAR_CONFIG` or the default); `home` holds the trust store."""
    user_path, user, _ = _user_layer(config_file)
    return read_project(Path(cwd).resolve(), user_path, user, home)


def _user_layer(config_file: Path | None) -> tuple[Path, dict[str, Any], dict[Key, int]]:
    user_path = config_file if config_file is not None else user_config_path()
    lines: dict[Key, int] = {}
    if config_file is not None or user_path.is_file():
        return user_path, load_file(user_path, lines=lines), lines
    return user_path, {}, lines


@dataclass
class Loaded:
    """Settings and the project file they were made with (None: there was none)."""

    settings: Settings
    project: ProjectConfig | None = None
    trust: bool = False  # `--trust`: the project file applied whole for this run

    @property
    def untrusted(self) -> ProjectConfig | None:
        """The project file, when keys of it were ignored (it is not trusted)."""
        p = self.project
        return p if p is not None and not p.trusted and p.guarded and not self.trust else None


def _from_env(env: dict[str, str] | os._Environ[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if env.get("AVATAR_PROVIDER"):
        out["provider"] = env["AVATAR_PROVIDER"]
    if env.get("AVATAR_MODEL"):
        out["model"] = env["AVATAR_MODEL"]
    if env.get("AVATAR_PERMISSION"):
        out["permission"] = env["AVATAR_PERMISSION"]
    return out


def load_config(
    cwd: Path,
    config_file: Path | None = None,
    flags: dict[str, Any] | None = None,
    preset: str | None = None,
    *,
    providers: Collection[str] | None = None,
    trust: bool = False,
    home: Path | None = None,
) -> Loaded:
    """Merge every layer into validated `Settings`; raises `ConfigError` with file and line.

    `providers` (the built-in ones' names): a preset naming a provider that is neither one of
    them nor configured is an error here, at load, naming where the preset says so. `trust`:
    apply the project file whole even if it is not trusted (`--trust`); `home`: avatar's data
    dir, where the trust store is (default `avatar_home()`)."""
    user_path, user, user_lines = _user_layer(config_file)
    data = user
    layers = [(user_path, user_lines)] if user else []
    project = read_project(cwd, user_path, user, home)
    if project is not None and project.state != "user":
        applied = project.data if trust or project.trusted else project.restricted
        data = deep_merge(data, applied)
        layers.append((project.path, project.lines))
    data = deep_merge(data, _from_env(os.environ))
    # No layer at all is the common case of a one-shot command: the defaults need no check,
    # and pydantic is not even loaded.
    settings = Settings() if not data else parse_settings(data)
    if providers is not None:
        check_preset_providers(settings, {*providers, *settings.providers}, layers)
    chosen = preset or settings.preset
    if chosen:
        settings = settings.apply_preset(chosen)
    clean = {k: v for k, v in (flags or {}).items() if v is not None}
    if clean:
        settings = parse_settings({**asdict(settings), **clean})
    return Loaded(settings, project, trust)
