"""Providers as data: command, transport, env, quirks, capabilities and hints.

A new ACP agent needs no code: a `transport: acp` entry in config becomes a `ProviderSpec`
served by the shared `ACPBridge`. Code lives in bridges only where behaviour differs.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from avatar.core import quickjson
from avatar.core.errors import AvatarError, UsageError
from avatar.core.fileio import atomic_write
from avatar.core.ids import sha256_hex
from avatar.providers.programs import find_executable

if TYPE_CHECKING:
    from collections.abc import Mapping

    from avatar.core.config import ProviderConfig, Settings
    from avatar.policy.secrets import SecretDetector

Transport = Literal["acp", "stream-json", "native"]

#: The bridge of every ACP agent.
ACP_BRIDGE = "avatar.bridges.acp.bridge:ACPBridge"


@dataclass(frozen=True)
class ProviderSpec:
    """Everything avatar knows about one provider before starting it (see providers.toml)."""

    name: str
    transport: Transport
    command: tuple[str, ...] = ()  # executable first; empty for in-process providers
    env: dict[str, str] = field(default_factory=dict)
    package: str | None = None  # npm package that ships the executable
    install_hint: str = ""
    auth_hint: str = ""
    login_command: str = ""  # the one command that logs in
    login_env: tuple[str, ...] = ()  # any of these set: has credentials
    login_files: tuple[str, ...] = ()  # any of these present: logged in
    # The agent also works without any of them (keys in its own config, free or local
    # models): finding none is no proof it is not logged in (`logged_in` says unknown).
    login_optional: bool = False
    model_from: tuple[str, ...] = ()  # where its configured model is read (`configured_model`)
    # Further variables the agent reads that change what it does (`NAME`, or `PREFIX*`):
    # with the others it declares, what the server's warm agents are keyed on and what a
    # client carries to the server for it (`avatar.providers.environment`).
    env_read: tuple[str, ...] = ()
    bridge: str = ACP_BRIDGE  # "module:Class", imported lazily
    store: str | None = None  # "module:Class" reading the provider's on-disk sessions
    quirks: frozenset[str] = frozenset()
    # Only for in-process providers: agents report what they can do when they start.
    capabilities: tuple[str, ...] = ()
    model: str | None = None
    # The agent's own mode in which it asks before changing anything (ACP `mode` option).
    permission_mode: str | None = None
    # Where the agent keeps its own state (sessions, config): the only places outside the
    # project its sandbox lets it write (`~` and `$VARS` expanded; unset variables skipped).
    state_dirs: tuple[str, ...] = ()
    # `state_dirs` are avatar's guess (an agent from config that names none: the conventional
    # homes of its names, `avatar.policy.homes`).
    state_guessed: bool = False
    # What in those places makes the agent run programs (settings, hooks, plugins): read-only
    # for it and all it runs; and its directories of one entry per project, {directory: how
    # the agent names a project's entry}, where other projects' entries are out of its reach
    # (`avatar.policy.state`).
    state_protected: tuple[str, ...] = ()
    state_projects: dict[str, str] = field(default_factory=dict)
    # The agent's own mode while avatar's walls confine it and its policy allows every action:
    # an agent whose own sandbox cannot run inside Landlock (codex's bubblewrap needs mounts)
    # leaves confinement to the walls.
    walled_mode: str | None = None
    # The environment variable through which the agent starts its sessions in a mode
    # (codex-acp: INITIAL_AGENT_MODE): given the mode avatar sets, so that setting it costs
    # no request when the agent honours it (avatar still checks and sets it when not).
    mode_env: str | None = None
    # The agent's own config in the project that can make it run programs (`/`-ended: a
    # directory): held back until `avatar trust` covers it (`avatar.policy.agent_config`).
    project_config: tuple[str, ...] = ()
    # How the agent is told to start without all of it while it is held back: arguments
    # added to its command, variables added to its environment, `_meta` added to its ACP
    # session requests. None of them: a blank stand-in covers each file in its walls.
    untrusted_args: tuple[str, ...] = ()
    untrusted_env: dict[str, str] = field(default_factory=dict)
    untrusted_meta: dict[str, Any] = field(default_factory=dict)
    # The instructions file the agent reads at the start of a session, which `/init` has it
    # write; and whether `/init` runs the agent's own init (None: where it lists one).
    instructions: str = "AGENTS.md"
    own_init: bool | None = None
    builtin: bool = True  # one of the five providers always offered (others: when found)

    @property
    def executable(self) -> str | None:
        """The command's program name, or None for in-process providers."""
        return self.command[0] if self.command else None


#: The shipped provider table, in order.
DATA_FILE = Path(__file__).with_name("providers.toml")
#: The providers always offered; the other shipped entries are offered when installed.
CORE = ("native", "claude", "claude-acp", "codex", "gemini")
# Order in which agent CLIs are tried when no provider is named and native has no credentials.
AUTO_ORDER = ("claude", "codex", "gemini")

_LIST_KEYS = (
    "command",
    "login_env",
    "login_files",
    "model_from",
    "env_read",
    "capabilities",
    "state_dirs",
    "state_protected",
    "project_config",
    "untrusted_args",
)


def _spec(name: str, entry: dict[str, Any]) -> ProviderSpec:
    data: dict[str, Any] = {k: tuple(v) if k in _LIST_KEYS else v for k, v in entry.items()}
    env = dict(data.pop("env", {}))
    as_root = data.pop("env_as_root", {})
    if as_root and hasattr(os, "geteuid") and os.geteuid() == 0:
        env.update(as_root)
    data["quirks"] = frozenset(data.pop("quirks", ()))
    return ProviderSpec(name=name, env=env, builtin=name in CORE, **data)


@cache
def shipped() -> dict[str, ProviderSpec]:
    """The providers of `providers.toml` (read once, on first use)."""
    return {name: _spec(name, entry) for name, entry in _table().items()}


def data_files() -> list[Path]:
    """The files the shipped providers are read from: the data file and avatar's copy."""
    from avatar.core.config import avatar_home

    copy = f"providers-{sha256_hex(str(DATA_FILE))[:16]}.json"
    return [DATA_FILE, avatar_home() / "cache" / copy]


def _table() -> dict[str, Any]:
    # The TOML parser costs ~15 ms of every command (its import and the parse), a JSON copy
    # in avatar's cache ~0.2: the copy is used while the data file is the one it was made
    # from, and made again (where it can be written) when it is not. The file stays the truth.
    # Each installation sharing a home keeps its own copy: one copy for all had two of them
    # (a checkout and a release, say) parse the TOML and rewrite it whenever they alternated.
    stat = DATA_FILE.stat()
    key = [stat.st_size, stat.st_mtime_ns, str(DATA_FILE)]
    copy = data_files()[1]
    try:
        cached = quickjson.loads(copy.read_text(encoding="utf-8"))
        if cached["key"] == key:
            return dict(cached["table"])
    except (OSError, ValueError, TypeError, KeyError):
        pass
    import tomllib

    with DATA_FILE.open("rb") as f:
        table = tomllib.load(f)

    with contextlib.suppress(OSError):  # a read-only home: the file is parsed each time
        atomic_write(copy, quickjson.dumps({"key": key, "table": table}).encode())
    return table


def __getattr__(name: str) -> Any:
    # `BUILTIN` reads the data file only when someone asks for it.
    if name == "BUILTIN":
        return shipped()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def resolve_spec(name: str, cfg: ProviderConfig | None) -> ProviderSpec | None:
    """Merge a shipped spec with its config entry; a config-only `transport: acp` entry is new."""
    base = shipped().get(name)
    if cfg is None:
        return base
    if base is None:
        if cfg.transport != "acp" and cfg.command is None and cfg.executable is None:
            return None
        base = ProviderSpec(
            name=name,
            transport=cfg.transport or "acp",
            install_hint="install the agent and name it in config (`command:`)",
            auth_hint="see the agent's documentation",
            builtin=True,  # named in config: always offered
        )
    command = base.command
    if cfg.command:
        command = tuple(cfg.command)
    elif cfg.executable:
        command = (cfg.executable, *command[1:])
    if cfg.args is not None:
        # `args` replaces the built-in arguments, but a stream-json bridge adds its own flags.
        command = (command[0], *cfg.args) if command else command
    state_dirs = tuple(cfg.state_dirs) if cfg.state_dirs is not None else base.state_dirs
    guessed = name not in shipped() and cfg.state_dirs is None
    if guessed:
        from avatar.policy import homes

        state_dirs = homes.entries(homes.names(name, command, never=_known_homes()))
    return replace(
        base,
        transport=cfg.transport or base.transport,
        command=command,
        env={**base.env, **cfg.env},
        model=cfg.model or base.model,
        package=cfg.package or base.package,
        install_hint=cfg.install_hint or base.install_hint,
        auth_hint=cfg.auth_hint or base.auth_hint,
        login_command=cfg.login_command or base.login_command,
        login_env=tuple(cfg.login_env) if cfg.login_env is not None else base.login_env,
        login_files=tuple(cfg.login_files) if cfg.login_files is not None else base.login_files,
        model_from=tuple(cfg.model_from) if cfg.model_from is not None else base.model_from,
        env_read=_given(cfg.env_read, base.env_read),
        quirks=frozenset(cfg.quirks) if cfg.quirks is not None else base.quirks,
        permission_mode=cfg.permission_mode or base.permission_mode,
        state_dirs=state_dirs,
        state_guessed=guessed,
        state_protected=(
            tuple(cfg.state_protected) if cfg.state_protected is not None else base.state_protected
        ),
        state_projects=(
            dict(cfg.state_projects) if cfg.state_projects is not None else base.state_projects
        ),
        walled_mode=cfg.walled_mode or base.walled_mode,
        project_config=_given(cfg.project_config, base.project_config),
        untrusted_args=_given(cfg.untrusted_args, base.untrusted_args),
        untrusted_env=base.untrusted_env if cfg.untrusted_env is None else cfg.untrusted_env,
        untrusted_meta=base.untrusted_meta if cfg.untrusted_meta is None else cfg.untrusted_meta,
        builtin=True,
    )


def _known_homes() -> frozenset[str]:
    """The names of the agents avatar has data for, their programs' and every folder of their
    `state_dirs`: never guessed as another agent's home (their protected files are data for
    them only)."""
    from avatar.policy import homes

    out: set[str] = set()
    for spec in shipped().values():
        out.update(n.lower() for n in homes.names(spec.name, spec.command))
        for entry in spec.state_dirs:
            out.update(part.lstrip(".").lower() for part in entry.split("/") if part)
    return frozenset(out)


def _given(value: list[str] | None, base: tuple[str, ...]) -> tuple[str, ...]:
    return base if value is None else tuple(value)


class ProviderRegistry:
    """The providers of one run: the built-in ones (with their config entries), then
    config-only ACP agents; `env` is the environment their processes start from."""

    def __init__(self, settings: Settings, env: Mapping[str, str]) -> None:
        builtin = shipped()
        names = list(builtin) + [n for n in settings.providers if n not in builtin]
        specs = (resolve_spec(name, settings.provider_config(name)) for name in names)
        self._specs = {spec.name: spec for spec in specs if spec is not None}
        self.env = env
        self._settings = settings
        self._secrets: SecretDetector | None = None

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def specs(self) -> list[ProviderSpec]:
        """Every provider, in order."""
        return list(self._specs.values())

    def installed(self) -> list[ProviderSpec]:
        """The providers that can start here, in order: the native agent, and every agent
        whose program is found (`find_executable`)."""
        return [
            spec
            for spec in self.specs()
            if spec.transport == "native"
            or find_executable(spec.executable or "", self.env_for(spec).get("PATH"))
        ]

    def add(self, spec: ProviderSpec) -> None:
        """Register (or replace) a provider."""
        self._specs[spec.name] = spec

    def spec(self, name: str) -> ProviderSpec:
        """The provider called `name`; a UsageError lists the known ones."""
        try:
            return self._specs[name]
        except KeyError:
            import difflib

            near = difflib.get_close_matches(name, list(self._specs), n=2)
            hint = f"did you mean {' or '.join(near)}? " if near else ""
            raise UsageError(
                f"unknown provider {name!r} ({hint}`avatar providers` lists them)"
            ) from None

    def secrets(self) -> SecretDetector:
        """The secret detector of every output (docs/design.md §10, `avatar.policy.secrets`): the
        values of the native models' key variables and of every key-named variable in the
        environment and in the providers' configured `env`, then every secret shape. Made
        when first asked for: a listing never needs it."""
        if self._secrets is None:
            from avatar.native.models import ModelRegistry
            from avatar.policy.secrets import SecretDetector

            names = ModelRegistry.from_settings(self._settings).key_variables()
            envs = [self.env, *(spec.env for spec in self.specs())]
            self._secrets = SecretDetector(*envs, names=names)
        return self._secrets

    def env_for(self, spec: ProviderSpec) -> dict[str, str]:
        """The full environment the provider's process runs with."""
        return {**self.env, **spec.env}

    def state_dirs(self, spec: ProviderSpec) -> list[Path]:
        """Where the walls let `spec`'s agent write outside the project (its `state_dirs`, or
        avatar's guess, as they stand now; nothing is made for the asking)."""
        from avatar.policy.sandbox import state_dirs

        env = self.env_for(spec)
        return state_dirs(spec.state_dirs, env, guessed=spec.state_guessed, make=False)

    def models(self, provider: str, settings: Settings) -> list[str]:
        """Model ids `provider` is known to offer (native: its model registry; agents say
        theirs only once started)."""
        if self.spec(provider).transport != "native":
            return []
        from avatar.native.models import ModelRegistry

        return [m.full_id for m in ModelRegistry.from_settings(settings).all()]

    def check_model(self, provider: str, model: str, settings: Settings) -> None:
        """A UsageError for a model the native agent does not know (agents check their own)."""
        if self.spec(provider).transport == "native":
            from avatar.native.models import ModelResolver

            ModelResolver.from_settings(settings, self.env).resolve(model)

    def default(self, settings: Settings) -> str:
        """docs/design.md §3: config/preset provider, else native with credentials, else the first
        agent CLI found; an AvatarError saying how to enable each when nothing is usable."""
        if settings.provider:
            return self.spec(settings.provider).name
        from avatar.native.models import native_has_credentials

        if native_has_credentials(settings, self.env):
            return "native"
        for name in AUTO_ORDER:
            spec = self._specs.get(name)
            if spec and spec.executable and find_executable(spec.executable, self.env.get("PATH")):
                return name
        hints = "; ".join(f"{s.name}: {s.auth_hint or s.install_hint}" for s in self.specs())
        raise AvatarError(f"no usable provider found. Looked for: {hints}")
