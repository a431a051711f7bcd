"""The environment variables each provider declares it reads (providers as data): what a
client carries to the server for the agents beyond avatar's own (`avatar.server.environment`).

A provider's variables are those its entry names (`avatar.providers.variables.declared`).
The native agent adds its models' key and base-URL variables (a config model's `api_key_env`
among them); codex, the variables its own config names as a model provider's key (`env_key`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.providers.variables import declared

if TYPE_CHECKING:
    from avatar.core.config import Settings
    from avatar.providers.registry import ProviderSpec


def wanted(
    specs: Iterable[ProviderSpec], settings: Settings | None, env: Mapping[str, str]
) -> tuple[frozenset[str], tuple[str, ...]]:
    """The names and the prefixes of every variable the providers `specs` declare, with
    `settings`' native models and `env` (where codex's config is)."""
    entries: list[str] = []
    for spec in specs:
        names, starts = declared(spec)
        entries += [*names, *(f"{prefix}*" for prefix in starts)]
        if spec.transport == "native":
            entries += _native(settings)
        if "codex_model_provider" in spec.quirks:
            entries += codex_env_keys(env)
    names = frozenset(e for e in entries if not e.endswith("*"))
    prefixes = tuple(sorted({e[:-1] for e in entries if e.endswith("*") and len(e) > 1}))
    return names, prefixes


def _native(settings: Settings | None) -> list[str]:
    from avatar.native.models import PROVIDERS, ModelRegistry

    urls = [p.base_url_env for p in PROVIDERS.values() if p.base_url_env]
    return [*urls, *sorted(ModelRegistry.from_settings(settings).key_variables())]


def codex_env_keys(env: Mapping[str, str]) -> list[str]:
    """The variables codex's `config.toml` names as its model providers' keys (`env_key`)."""
    home = Path(env.get("CODEX_HOME") or Path(env.get("HOME") or Path.home()) / ".codex")
    try:
        text = (home / "config.toml").read_text(encoding="utf-8")
    except OSError:
        return []
    if "env_key" not in text:  # (the TOML parser only where there is something to find)
        return []
    import tomllib

    try:
        data: Any = tomllib.loads(text)
    except ValueError:
        return []
    found = data.get("model_providers") if isinstance(data, dict) else None
    if not isinstance(found, dict):
        return []
    keys = (entry.get("env_key") for entry in found.values() if isinstance(entry, dict))
    return [key for key in keys if isinstance(key, str) and key]
