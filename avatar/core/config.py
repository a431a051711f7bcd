"""Configuration (docs/design.md §4): layered YAML + environment + flags, checked by pydantic.

Layers, lowest first: built-in defaults < user file (`$AVATAR_CONFIG`, `-c FILE`, or
`~/.config/avatar/config.yaml`) < `<project>/.avatar.yaml` < environment < command-line flags;
`avatar.engine.config_layers` merges them (and restricts a project file nobody trusted). This module
holds the schema and reads one file. A bad file is reported as `<file>:<line>: <key>: <problem>`.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from avatar.core.config_markers import Bounds, OffIsFalse, OnOff, SocketNames
from avatar.core.errors import ConfigError

TYPE_CHECKING = False  # `typing` is loaded by now, but this reads the same as elsewhere
if TYPE_CHECKING:
    from pydantic import TypeAdapter

Permission = Literal["ask", "allow", "deny"]
_T = TypeVar("_T")


# The models are plain dataclasses: a run without a config file builds the defaults without
# loading pydantic (~100 ms of `avatar session list`); a file is checked by pydantic, which
# validates stdlib dataclasses, at the boundary (`parse_settings`).


def _strict(cls: type[_T]) -> type[_T]:
    """Make pydantic refuse unknown keys of this dataclass when it checks a config file."""
    cls.__pydantic_config__ = {"extra": "forbid"}  # type: ignore[attr-defined]
    return cls


@_strict
@dataclass
class SessionDefaults:
    """Per-provider defaults for opening a session."""

    resume_id: str | None = None
    continue_last: bool = False


@_strict
@dataclass
class McpServer:
    """An MCP server handed to agents: stdio (`command`) or http/sse (`url`)."""

    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    type: Literal["stdio", "http", "sse"] | None = None
    headers: dict[str, str] = field(default_factory=dict)


@_strict
@dataclass
class ProviderConfig:
    """One `providers:` entry; every key is optional and overrides the built-in default."""

    transport: Literal["acp", "stream-json", "native"] | None = None
    executable: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    env: dict[str, str] = field(default_factory=dict)
    model: str | None = None
    session: SessionDefaults | None = None
    permission_mode: str | None = None  # passed to agents that have their own modes (claude)
    auth_method: str | None = None  # ACP authenticate method id, when the agent requires one
    # what `avatar providers` says about it (the same keys as avatar/providers/providers.toml)
    package: str | None = None
    install_hint: str | None = None
    auth_hint: str | None = None
    login_command: str | None = None
    login_env: list[str] | None = None
    login_files: list[str] | None = None
    model_from: list[str] | None = None  # where the agent's configured model is read
    env_read: list[str] | None = None  # further variables it reads (`NAME` or `PREFIX*`)
    quirks: list[str] | None = None
    state_dirs: list[str] | None = None  # where the agent writes its own state (its sandbox)
    state_protected: list[str] | None = None  # what of it stays read-only for the agent
    state_projects: dict[str, str] | None = None  # its per-project dirs: {dir: naming rule}
    walled_mode: str | None = None  # the agent's own mode while avatar's walls confine it
    # the agent's own config in the project, and how it is told to start without it while
    # that is not trusted (the same keys as avatar/providers/providers.toml)
    project_config: list[str] | None = None
    untrusted_args: list[str] | None = None
    untrusted_env: dict[str, str] | None = None
    untrusted_meta: dict[str, Any] | None = None
    # native only
    auto_compact: bool | None = None
    compact_threshold: Annotated[float | None, Bounds(0, 1)] = None
    compaction: Literal["none", "summary", "sliding"] | None = None


@_strict
@dataclass
class ModelCost:
    """Price per million tokens."""

    input: float = 0
    output: float = 0
    cache_read: float | None = None
    cache_write: float | None = None


@_strict
@dataclass
class ModelConfig:
    """A `models:` entry added to the native model registry."""

    id: str
    api: Literal["openai", "anthropic"] = "openai"
    base_url: str | None = None
    api_key_env: str | None = None
    context_window: Annotated[int, Bounds(0)] = 128_000
    max_output: Annotated[int | None, Bounds(0)] = None
    cost: ModelCost = field(default_factory=ModelCost)
    provider: str | None = None  # e.g. "ollama"; used for `provider/id` names


@_strict
@dataclass
class Scope:
    """What agents, their tools and the commands they run may touch (docs/design.md §4, §10)."""

    read: list[str] = field(default_factory=lambda: ["."])
    write: list[str] = field(default_factory=lambda: ["."])
    # `.git` is not denied: git must read it, and its dangerous files are protected paths
    # (`avatar.policy.protected`), refused for writes whatever this list says.
    deny: list[str] = field(default_factory=lambda: ["**/.env", "**/.env.*"])
    shell_commands: list[str] = field(default_factory=list)
    #: Protected paths (or their patterns) the user lets agents change anyway.
    allow_protected: list[str] = field(default_factory=list)
    #: Which processes run inside the kernel's walls: agent processes and the commands avatar
    #: runs (`agents`), only the commands (`commands`), or none (`off`).
    sandbox: Annotated[Literal["agents", "commands", "off"], OffIsFalse()] = "agents"
    #: Paths outside the project that sandboxed commands may read besides the system's own.
    read_outside: list[str] = field(default_factory=list)
    #: Unix sockets outside the project the walls leave reachable (`ssh-agent`, `gpg-agent`,
    #: `docker`, or a path); every other one is covered.
    sockets: Annotated[list[str], SocketNames()] = field(default_factory=list)
    #: The network of sandboxed commands: all of it (`on`), only their own loopback
    #: (`loopback`), or none (`off`).
    network: Annotated[Literal["on", "loopback", "off"], OnOff()] = "on"


@_strict
@dataclass
class Preset:
    """A named bundle of settings, chosen with `--preset NAME` or `/preset NAME`."""

    provider: str | None = None
    model: str | None = None
    system_prompt: str | None = None
    permission: Permission | None = None
    scope: Scope | None = None


@_strict
@dataclass
class ServerSettings:
    """`avatar serve`'s own keys (docs/design.md §11)."""

    #: Seconds a session stays loaded in the server after its last client left, so that the
    #: next `chat --resume` of it runs at once (0 or less: it closes with its last client).
    keep_sessions: float = 300.0


@_strict
@dataclass
class Settings:
    """The whole, merged configuration."""

    provider: str | None = None
    model: str | None = None
    providers: dict[str, ProviderConfig] = field(default_factory=dict)
    mcp_servers: dict[str, McpServer] = field(default_factory=dict)
    presets: dict[str, Preset] = field(default_factory=dict)
    models: list[ModelConfig] = field(default_factory=list)
    default_model: str | None = None
    scope: Scope = field(default_factory=Scope)
    permission: Permission = "ask"
    system_prompt: str | None = None
    preset: str | None = None  # the preset in force, if any
    #: The share of the target model's context window a handoff may fill (estimated tokens).
    handoff_share: Annotated[float, Bounds(0, 1)] = 0.25
    server: ServerSettings = field(default_factory=ServerSettings)
    #: How the REPL rings when a turn ends or a permission waits in an unfocused terminal
    #: (`avatar.cli.repl.notify`): auto, bell, osc9, osc777 or off.
    notify: Annotated[Literal["auto", "bell", "osc9", "osc777", "off"], OffIsFalse()] = "auto"

    def provider_config(self, name: str) -> ProviderConfig | None:
        """The `providers.<name>` entry, if configured."""
        return self.providers.get(name)

    def apply_preset(self, name: str) -> Settings:
        """These settings with preset `name` laid over them."""
        preset = self.presets.get(name)
        if preset is None:
            known = ", ".join(sorted(self.presets)) or "none defined"
            raise ConfigError(f"unknown preset {name!r} (presets: {known})")
        chosen = {k: v for k, v in asdict(preset).items() if v is not None}
        return parse_settings({**asdict(self), **chosen, "preset": name})


class InvalidSettings(ConfigError):
    """A config mapping failed its check: where (`loc`, a key path) and what is wrong."""

    def __init__(self, loc: tuple[Any, ...], problem: str) -> None:
        self.loc, self.problem = loc, problem
        super().__init__(f"config error: {key_path(loc)}: {problem}")


_adapter: TypeAdapter[Settings] | None = None


def parse_settings(data: dict[str, Any]) -> Settings:
    """Check a mapping of config keys and build `Settings` from it; `InvalidSettings` names
    the first bad key."""
    global _adapter
    from avatar.core.exact import build

    exact = build(Settings, data)
    if exact is not None:  # (no value pydantic would change or refuse: its result, at once)
        return exact
    from pydantic import TypeAdapter, ValidationError

    if _adapter is None:
        _adapter = TypeAdapter(Settings)
    try:
        return _adapter.validate_python(data)
    except ValidationError as e:
        err = e.errors()[0]
        unknown = err["type"] in ("extra_forbidden", "unexpected_keyword_argument")
        problem = "unknown key" if unknown else " ".join(err["msg"].split())
        raise InvalidSettings(tuple(err["loc"]), problem) from None


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
    return next((c for c in project_config_candidates(cwd) if c.is_file()), None)


def project_config_candidates(cwd: Path) -> list[Path]:
    """Where a project's `.avatar.yaml` is looked for, nearest first: cwd and each parent, up
    to the home directory."""
    home = Path.home()
    out = []
    for d in (cwd, *cwd.parents):
        out.append(d / ".avatar.yaml")
        if d == home:
            break
    return out


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`base` with `over` laid on it: mappings merge key by key, anything else is replaced."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
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


def read_file(path: Path) -> bytes:
    """A config file's bytes; a `ConfigError` naming it when it cannot be read."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config error: {path}: file not found") from None
    except OSError as e:
        raise ConfigError(f"config error: {path}: cannot read: {e}") from None


def load_file(
    path: Path, raw: bytes | None = None, lines: dict[tuple[Any, ...], int] | None = None
) -> dict[str, Any]:
    """Read and check one config file on its own, so errors name this file and line.

    `raw`: the file's bytes, already read (what was hashed is then what is parsed); `lines`,
    when given, gets the line of every key, for checks made once the layers are merged."""
    import yaml

    try:
        text = (read_file(path) if raw is None else raw).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"config error: {path}: cannot read: {e}") from None
    # libyaml's loader, where PyYAML was built with it: ~6× the pure-Python one's speed.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        node = yaml.compose(text, Loader=loader)
        data = yaml.load(text, Loader=loader)  # (a safe loader: plain data only)
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
    lines = {} if lines is None else lines
    if node is not None:
        _line_map(node, (), lines)
    try:
        parse_settings(data)
    except InvalidSettings as e:
        at = _nearest_line(lines, e.loc)
        raise ConfigError(f"config error: {path}:{at}: {key_path(e.loc)}: {e.problem}") from None
    return data


def key_path(loc: tuple[Any, ...]) -> str:
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


def check_preset_providers(
    settings: Settings, known: set[str], layers: list[tuple[Path, dict[tuple[Any, ...], int]]]
) -> None:
    """A `ConfigError` naming the file, key and line of a preset whose provider is not in
    `known` (`layers`: each file read and the lines of its keys, lowest first)."""
    for name, preset in settings.presets.items():
        if preset.provider is None or preset.provider in known:
            continue
        loc = ("presets", name, "provider")
        # The last layer that sets the key is the one whose value won the merge.
        where = next((f"{path}:{lines[loc]}" for path, lines in reversed(layers) if loc in lines))
        raise ConfigError(
            f"config error: {where}: {key_path(loc)}: unknown provider {preset.provider!r} "
            f"(providers: {', '.join(sorted(known))})"
        )
