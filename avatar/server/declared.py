"""Which of a client's variables the server asks for (`avatar.server.environment`): those the
providers of its config declare (`avatar.providers.environment`), found in the server, which
has the provider data loaded (a client would pay for a TOML parser to read it)."""

from __future__ import annotations

import os
from pathlib import Path

from avatar.core.config import Settings
from avatar.core.errors import AvatarError
from avatar.engine.config_layers import load_config
from avatar.providers.environment import wanted
from avatar.providers.registry import ProviderRegistry


def declared_variables(cwd: Path, config: Path | None) -> tuple[frozenset[str], tuple[str, ...]]:
    """The names and prefixes of the variables every provider of the config at `cwd` (the
    user's, the project's, or `config` given with `-c`) declares, read with the process's
    environment (the client's, while its command runs); those of the shipped providers when
    the config is broken (the command says so itself)."""
    settings: Settings | None
    try:
        settings = load_config(cwd, config).settings
    except (AvatarError, OSError):
        settings = None
    registry = ProviderRegistry(settings or Settings(), os.environ)
    return wanted(registry.specs(), settings, os.environ)
