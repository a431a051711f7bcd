"""Configuration (DESIGN §4): layered YAML + environment + flags, validated with pydantic.

Layers, lowest first: built-in defaults < user file (`$AVATAR_CONFIG`, `-c FILE`, or
`~/.config/avatar/config.yaml`) < `<project>/.avatar.yaml` < environment < command-line flags.
A bad file is reported as `<file>:<line>: <key>: <problem>`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from avatar.errors import ConfigError

Permission = Literal["ask", "allow", "deny"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class SessionDefaults(_Strict):
    """Per-provider defaults for opening a session."""

    resume_id: str | None = None
    continue_last: bool = False


class McpServer(_Strict):
    """An MCP server handed to agents: stdio (`command`) or http/sse (`url`)."""

    command: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    url: str | None = None
    type: Literal["stdio", "http", "sse"] | None = None
    headers: dict[str, str] = {}


class ProviderConfig(_Strict):
    """One `providers:` entry; every key is optional and overrides the built-in default."""

    transport: Literal["acp", "stream-json", "native"] | None = None
    executable: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    env: dict[str, str] = {}
    model: str | None = None
    session: SessionDefaults | None = None
    permission_mode: str | None = None  # passed to agents that have their own modes (claude)
    auth_method: str | None = None  # ACP authenticate method id, when the agent requires one
    # what `avatar providers` says about it (the same keys as avatar/providers.toml)
    package: str | None = None
    install_hint: str | None = None
    auth_hint: str | None = None
    login_command: str | None = None
    login_env: list[str] | None = None
    login_files: list[str] | None = None
    quirks: list[str] | None = None
    # native only
    auto_compact: bool | None = None
    compact_threshold: float | None = Field(default=None, gt=0, le=1)
    compaction: Literal["none", "summary", "sliding"] | None = None


class ModelCost(_Strict):
    """Price per million tokens."""

    input: float = 0
    output: float = 0
    cache_read: float | None = None
    cache_write: float | None = None


class ModelConfig(_Strict):
    """A `models:` entry added to the native model registry."""

    id: str
    api: Literal["openai", "anthropic"] = "openai"
    base_url: str | None = None
    api_key_env: str | None = None
    context_window: int = Field(default=128_000, gt=0)
    max_output: int | None = Field(default=None, gt=0)
    cost: ModelCost = Field(default_factory=ModelCost)
    provider: str | None = None  # e.g. "ollama"; used for `provider/id` names


class Scope(_Strict):
    """What native tools (and ACP file callbacks) may touch, relative to the project."""

    read: list[str] = ["."]
    write: list[str] = ["."]
    deny: list[str] = [".git/**", "**/.env"]
    shell_commands: list[str] = []


class Preset(_Strict):
    """A named bundle of settings, chosen with `--preset NAME` or `/preset NAME`."""

    provider: str | None = None
    model: str | None = None
    system_prompt: str | None = None
    permission: Permission | None = None
    scope: Scope | None = None


class Settings(_Strict):
    """The whole, merged configuration."""

    provider: str | None = None
    model: str | None = None
    providers: dict[str, ProviderConfig] = {}
    mcp_servers: dict[str, McpServer] = {}
    presets: dict[str, Preset] = {}
    models: list[ModelConfig] = []
    default_model: str | None = None
    scope: Scope = Field(default_factory=Scope.model_construct)  # defaults need no checks
    permission: Permission = "ask"
    system_prompt: str | None = None
    preset: str | None = None  # the preset in force, if any
    #: The share of the target model's context window a handoff may fill (estimated tokens).
    handoff_share: float = Field(default=0.25, gt=0, le=1)

    def provider_config(self, name: str) -> ProviderConfig | None:
        """The `providers.<name>` entry, if configured."""
        return self.providers.get(name)

    def apply_preset(self, name: str) -> Settings:
        """These settings with preset `name` laid over them."""
        preset = self.presets.get(name)
        if preset is None:
            known = ", ".join(sorted(self.presets)) or "none defined"
            raise ConfigError(f"unknown preset {name!r} (presets: {known})")
        data = self.model_dump(exclude_unset=False)
        for key, value in preset.model_dump(exclude_none=True).items():
            data[key] = value
        data["preset"] = name
        return Settings.model_validate(data)


def user_config_path() -> Path:
    """`$AVATAR_CONFIG`, else the platform config dir's `avatar/config.yaml`."""
    env = os.environ.get("AVATAR_CONFIG")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg else Path.home() / ".config"
    return base / "avatar" / "config.yaml"


def avatar_home() -> Path:
    """`$AVATAR_HOME`, else the platform user-data dir."""
    env = os.environ.get("AVATAR_HOME")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("avatar", appauthor=False))


def find_project_config(cwd: Path) -> Path | None:
    """The nearest `.avatar.yaml` from cwd up to (not beyond) the home directory."""
    home = Path.home()
    for d in (cwd, *cwd.parents):
        candidate = d / ".avatar.yaml"
        if candidate.is_file():
            return candidate
        if d == home:
            break
    return None


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _line_map(
    node: Any,
    path: tuple[Any, ...],
    out: dict[tuple[Any, ...], int],
    seen: set[int] | None = None,
) -> None:
    """Record the 1-based line of every key and item in a composed YAML node tree."""
    import yaml

    # An alias repeats a node: walking it again could recurse forever (`&a [*a]`) or blow
    # up exponentially (nested aliases), so each node is walked once.
    seen = set() if seen is None else seen
    if id(node) in seen:
        return
    seen.add(id(node))
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key_path = (*path, key_node.value)
            out[key_path] = key_node.start_mark.line + 1
            _line_map(value_node, key_path, out, seen)
            out[key_path] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _line_map(item, (*path, i), out, seen)


def load_file(path: Path) -> dict[str, Any]:
    """Read and check one config file on its own, so errors name this file and line."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config error: {path}: file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"config error: {path}: cannot read: {e}") from None
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except RecursionError:
        raise ConfigError(f"config error: {path}: yaml: nested too deeply") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f"{mark.line + 1}:" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"config error: {path}:{line} yaml: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config error: {path}:1: (top): expected a mapping of keys")
    lines: dict[tuple[Any, ...], int] = {}
    if node is not None:
        _line_map(node, (), lines)
    try:
        Settings.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(err["loc"])
        line = _nearest_line(lines, loc)
        key = _key_path(loc)
        msg = " ".join(err["msg"].split())
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        raise ConfigError(f"config error: {path}:{line}: {key}: {msg}") from None
    return data


def _key_path(loc: tuple[Any, ...]) -> str:
    """`a.b.c` for an error location; a key with line breaks or control characters is shown
    quoted, so the error stays one line."""
    parts = (str(p) if str(p).isprintable() else repr(str(p)) for p in loc)
    return ".".join(parts) or "(top)"


def _nearest_line(lines: dict[tuple[Any, ...], int], loc: tuple[Any, ...]) -> int:
    # pydantic adds union/type tags to locations; drop trailing parts until a YAML key matches.
    while loc:
        if loc in lines:
            return lines[loc]
        loc = loc[:-1]
    return 1


def _from_env(env: dict[str, str] | os._Environ[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if env.get("AVATAR_PROVIDER"):
        out["provider"] = env["AVATAR_PROVIDER"]
    if env.get("AVATAR_MODEL"):
        out["model"] = env["AVATAR_MODEL"]
    if env.get("AVATAR_PERMISSION"):
        out["permission"] = env["AVATAR_PERMISSION"]
    return out


def load_settings(
    cwd: Path,
    config_file: Path | None = None,
    flags: dict[str, Any] | None = None,
    preset: str | None = None,
) -> Settings:
    """Merge every layer into validated `Settings`; raises `ConfigError` with file and line."""
    data: dict[str, Any] = {}
    user = config_file if config_file is not None else user_config_path()
    if config_file is not None or user.is_file():
        data = _deep_merge(data, load_file(user))
    project = find_project_config(cwd)
    if project is not None and project != user:
        data = _deep_merge(data, load_file(project))
    data = _deep_merge(data, _from_env(os.environ))
    try:
        # No layer at all is the common case of a one-shot command: the defaults need no
        # validation, and skipping it keeps pydantic's schema builder out of start-up.
        settings = Settings.model_construct() if not data else Settings.model_validate(data)
        chosen = preset or settings.preset
        if chosen:
            settings = settings.apply_preset(chosen)
        if flags:
            clean = {k: v for k, v in flags.items() if v is not None}
            if clean:
                settings = Settings.model_validate(
                    {**settings.model_dump(exclude_unset=True), **clean}
                )
    except ValidationError as e:
        err = e.errors()[0]
        msg = " ".join(err["msg"].split())
        raise ConfigError(f"config error: {_key_path(tuple(err['loc']))}: {msg}") from None
    return settings
