"""Providers as data: command, transport, env, quirks, capabilities and hints.

A new ACP agent needs no code: a `transport: acp` entry in config becomes a `ProviderSpec`
served by the shared `ACPBridge`. Code lives in bridges only where behaviour differs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from avatar.errors import AvatarError, UsageError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from avatar.config import ProviderConfig, Settings

Transport = Literal["acp", "stream-json", "native"]

# The checkout's pinned agent CLIs (`npm ci --prefix bridges`).
BRIDGES_BIN = Path(__file__).resolve().parent.parent / "bridges" / "node_modules" / ".bin"


@dataclass(frozen=True)
class ProviderSpec:
    """Everything avatar knows about one provider before starting it."""

    name: str
    transport: Transport
    command: tuple[str, ...] = ()  # executable first; empty for in-process providers
    env: dict[str, str] = field(default_factory=dict)
    package: str | None = None  # npm package that ships the executable
    install_hint: str = ""
    auth_hint: str = ""
    bridge: str = "avatar.bridges.acp:ACPBridge"  # "module:Class", imported lazily
    store: str | None = None  # "module:Class" reading the provider's on-disk sessions
    quirks: frozenset[str] = frozenset()
    # What the provider is documented to support; the running bridge reports the truth.
    known_capabilities: tuple[str, ...] = ()
    model: str | None = None

    @property
    def executable(self) -> str | None:
        """The command's program name, or None for in-process providers."""
        return self.command[0] if self.command else None


BUILTIN: dict[str, ProviderSpec] = {
    spec.name: spec
    for spec in (
        ProviderSpec(
            name="native",
            transport="native",
            bridge="avatar.bridges.native:NativeBridge",
            store="avatar.sessions.native:NativeStore",
            install_hint="built in",
            auth_hint="set OPENAI_API_KEY or ANTHROPIC_API_KEY, OPENAI_BASE_URL for a local "
            "server, or run Ollama on localhost:11434",
            known_capabilities=(
                "list",
                "load",
                "resume",
                "continue_last",
                "fork",
                "delete",
                "cancel",
            ),
        ),
        ProviderSpec(
            name="claude",
            transport="stream-json",
            command=(
                "claude",
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
            ),
            package="@anthropic-ai/claude-code",
            bridge="avatar.bridges.claude:ClaudeBridge",
            store="avatar.sessions.claude:ClaudeStore",
            install_hint="npm install -g @anthropic-ai/claude-code (or npm ci --prefix bridges)",
            auth_hint="run `claude` once to log in, or set ANTHROPIC_API_KEY",
            known_capabilities=("list", "resume", "continue_last", "fork", "delete", "cancel"),
        ),
        ProviderSpec(
            name="claude-acp",
            transport="acp",
            command=("claude-agent-acp",),
            # As root, claude refuses to skip permission prompts unless told it is sandboxed.
            env={"IS_SANDBOX": "1"} if hasattr(os, "geteuid") and os.geteuid() == 0 else {},
            package="@zed-industries/claude-agent-acp",
            store="avatar.sessions.claude:ClaudeStore",
            install_hint="npm install -g @zed-industries/claude-agent-acp "
            "(or npm ci --prefix bridges)",
            auth_hint="log in with `claude`, or set ANTHROPIC_API_KEY",
            quirks=frozenset({"use_installed_claude"}),
            known_capabilities=("list", "load", "resume", "continue_last", "fork", "cancel"),
        ),
        ProviderSpec(
            name="codex",
            transport="acp",
            command=("codex-acp",),
            package="@zed-industries/codex-acp",
            store="avatar.sessions.codex:CodexStore",
            install_hint="npm install -g @zed-industries/codex-acp (or npm ci --prefix bridges)",
            auth_hint="set OPENAI_API_KEY, log in with `codex login`, or configure a "
            "model_providers entry in $CODEX_HOME/config.toml",
            known_capabilities=("list", "load", "resume", "continue_last", "cancel"),
        ),
        ProviderSpec(
            name="gemini",
            transport="acp",
            command=("gemini", "--acp"),
            env={
                "GEMINI_CLI_NO_RELAUNCH": "true"
            },  # halves start-up; the relaunch only tunes memory
            package="@google/gemini-cli",
            store="avatar.sessions.gemini:GeminiStore",
            install_hint="npm install -g @google/gemini-cli (or npm ci --prefix bridges)",
            auth_hint="set GEMINI_API_KEY, or run `gemini` once to log in",
            quirks=frozenset({"late_replay", "same_minute_load", "list_from_disk"}),
            known_capabilities=("load", "continue_last", "cancel"),
        ),
    )
}

# Order in which agent CLIs are tried when no provider is named and native has no credentials.
AUTO_ORDER = ("claude", "codex", "gemini")


def resolve_spec(name: str, cfg: ProviderConfig | None) -> ProviderSpec | None:
    """Merge a built-in spec with its config entry; a config-only `transport: acp` entry is new."""
    base = BUILTIN.get(name)
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
        )
    command = base.command
    if cfg.command:
        command = tuple(cfg.command)
    elif cfg.executable:
        command = (cfg.executable, *command[1:])
    if cfg.args is not None:
        # `args` replaces the built-in arguments, but a stream-json bridge adds its own flags.
        command = (command[0], *cfg.args) if command else command
    return replace(
        base,
        transport=cfg.transport or base.transport,
        command=command,
        env={**base.env, **cfg.env},
        model=cfg.model or base.model,
    )


class ProviderRegistry:
    """The providers of one run: the built-in ones (with their config entries), then
    config-only ACP agents; `env` is the environment their processes start from."""

    def __init__(self, settings: Settings, env: Mapping[str, str]) -> None:
        names = list(BUILTIN) + [n for n in settings.providers if n not in BUILTIN]
        specs = (resolve_spec(name, settings.provider_config(name)) for name in names)
        self._specs = {spec.name: spec for spec in specs if spec is not None}
        self.env = env

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def specs(self) -> list[ProviderSpec]:
        """Every provider, in order."""
        return list(self._specs.values())

    def add(self, spec: ProviderSpec) -> None:
        """Register (or replace) a provider."""
        self._specs[spec.name] = spec

    def spec(self, name: str) -> ProviderSpec:
        """The provider called `name`; a UsageError lists the known ones."""
        try:
            return self._specs[name]
        except KeyError:
            known = ", ".join(self._specs)
            raise UsageError(f"unknown provider {name!r} (known: {known})") from None

    def env_for(self, spec: ProviderSpec) -> dict[str, str]:
        """The full environment the provider's process runs with."""
        return {**self.env, **spec.env}

    def default(self, settings: Settings) -> str:
        """DESIGN §3: config/preset provider, else native with credentials, else the first
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


def find_executable(program: str, path: str | None = None) -> str | None:
    """Config path, then PATH, then the checkout's `bridges/node_modules/.bin` (DESIGN §2)."""
    if os.sep in program:
        p = Path(program).expanduser()
        return str(p) if p.is_file() and os.access(p, os.X_OK) else None
    found = shutil.which(program, path=path)
    if found:
        return found
    candidate = BRIDGES_BIN / program
    if candidate.exists() and os.access(candidate, os.X_OK):
        return str(candidate)
    return None


def package_version(executable: str, package: str | None) -> str | None:
    """The version of the npm package an executable belongs to, read from its package.json."""
    real = Path(os.path.realpath(executable))
    for parent in real.parents:
        manifest = parent / "package.json"
        if manifest.is_file():
            try:
                data = json.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            if package is None or data.get("name") == package:
                version = data.get("version")
                return str(version) if version else None
        if parent.name == "node_modules":
            break
    return None


def executable_version(executable: str, package: str | None) -> str | None:
    """The version the CLI or its npm package reports; `--version` only as a last resort."""
    version = package_version(executable, package)
    if version:
        return version
    try:
        out = subprocess.run(
            [executable, "--version"],
            capture_output=True,
            text=True,
            timeout=5,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    first = (out.stdout or out.stderr).strip().splitlines()
    return first[0].strip() if first and out.returncode == 0 else None
