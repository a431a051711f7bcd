"""What `avatar providers` says of each provider beyond its data: logged in or not, and the
session capabilities the agent reported the last time it started (cached per version)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.core import quickjson
from avatar.core.fileio import atomic_write

if TYPE_CHECKING:
    from avatar.core.config import Settings
    from avatar.providers.capabilities import SessionCapabilities
    from avatar.providers.registry import ProviderSpec

_VAR = re.compile(r"\$(\w+)|\$\{(\w+)\}")


def _expand(pattern: str, env: Mapping[str, str]) -> Path | None:
    """`~` and `$VARS` from the provider's environment; None when a variable is unset."""
    missing = False

    def var(m: re.Match[str]) -> str:
        nonlocal missing
        value = env.get(m.group(1) or m.group(2) or "")
        if not value:
            missing = True
        return value or ""

    text = _VAR.sub(var, pattern)
    if missing:
        return None
    if text.startswith("~"):
        text = (env.get("HOME") or str(Path.home())) + text[1:]
    return Path(text)


def configured_model(spec: ProviderSpec, env: Mapping[str, str]) -> str | None:
    """The model the agent is configured to run (its `model_from`: a variable, or a key of
    its own settings file), read before it starts; None when none is set."""
    for source in spec.model_from:
        if source.startswith("env:"):
            value: Any = env.get(source[4:])
        else:
            pattern, _, key = source.partition("#")
            path = _expand(pattern, env)
            value = _setting(path, key) if path is not None and path.is_file() else None
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _setting(path: Path, key: str) -> Any:
    """The value at dotted `key` of a JSON or TOML file; None when absent or unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".toml":
            import tomllib  # (only for a codex configuration)

            data: Any = tomllib.loads(text)
        else:
            data = quickjson.loads(text)
    except (OSError, ValueError):
        return None
    for part in key.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


def _codex_model_provider(env: Mapping[str, str]) -> bool:
    # A `model_provider` of one's own in config.toml needs no login (its key is in env_key).
    home = Path(env.get("CODEX_HOME") or Path(env.get("HOME") or Path.home()) / ".codex")
    try:
        text = (home / "config.toml").read_text(encoding="utf-8")
    except OSError:
        return False
    return re.search(r"(?m)^\s*model_provider\s*=", text) is not None


def logged_in(spec: ProviderSpec, env: Mapping[str, str], settings: Settings) -> bool | None:
    """True when the provider looks logged in (a key in its environment or its credentials
    file), False when it looks not, None when avatar cannot tell."""
    if spec.transport == "native":
        from avatar.native.models import native_has_credentials

        return native_has_credentials(settings, env)
    if any(env.get(name) for name in spec.login_env):
        return True
    for pattern in spec.login_files:
        path = _expand(pattern, env)
        if path is not None and path.is_file():
            return True
    if "codex_model_provider" in spec.quirks and _codex_model_provider(env):
        return True
    if (spec.login_env or spec.login_files) and not spec.login_optional:
        return False
    return None


class CapabilityCache:
    """The capabilities each agent reported at its last start, per provider and version, in
    `$AVATAR_HOME/cache/capabilities.json` (a cache: deleting it loses nothing)."""

    def __init__(self, avatar_home: Path) -> None:
        self.path = avatar_home / "cache" / "capabilities.json"

    def _read(self) -> dict[str, Any]:
        try:
            data = quickjson.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, provider: str, version: str | None) -> list[str] | None:
        """The capabilities seen for this version of the agent, or None if never seen."""
        entry = self._read().get(provider)
        if not isinstance(entry, dict) or entry.get("version") != version:
            return None
        caps = entry.get("capabilities")
        return [str(c) for c in caps] if isinstance(caps, list) else None

    def learned(
        self, spec: ProviderSpec, env: Mapping[str, str], caps: SessionCapabilities
    ) -> None:
        """Remember what the installed version of `spec`'s agent reported at its start."""
        self.record(spec.name, installed_version(spec, env), caps)

    def record(self, provider: str, version: str | None, caps: SessionCapabilities) -> None:
        """Remember what the agent reported (a no-op when nothing changed)."""
        names = caps.names()
        data = self._read()
        old = data.get(provider)
        if isinstance(old, dict) and (old.get("version"), old.get("capabilities")) == (
            version,
            names,
        ):
            return
        # (here, not at the top: a cold one-shot loads this module before its agent starts)
        import json
        from datetime import UTC, datetime

        data[provider] = {
            "version": version,
            "capabilities": names,
            "seen": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        # A read-only home: `providers` just says "unknown" again.
        with contextlib.suppress(OSError):
            atomic_write(self.path, json.dumps(data, indent=1).encode())


def installed_version(spec: ProviderSpec, env: Mapping[str, str]) -> str | None:
    """The version of the provider's program as its npm package says (no process spawned)."""
    from avatar.providers.programs import find_executable, package_version

    if spec.executable is None:
        return None
    path = find_executable(spec.executable, env.get("PATH"))
    return package_version(path, spec.package) if path else None


def hint(spec: ProviderSpec, found: bool, logged: bool | None) -> str:
    """The one command that makes the provider usable (empty when it looks ready)."""
    if not found:
        return spec.install_hint
    if logged is False:
        return spec.login_command or spec.auth_hint
    return ""


__all__ = ["CapabilityCache", "hint", "installed_version", "logged_in"]
