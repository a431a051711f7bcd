"""Which model each provider runs (docs/design.md §4). A model asked for is one provider's, never
the next's: `-m` or a preset's model waits for the first provider opened (`claim`), a session's
settings or `/model` set it for one provider (`use`), and a provider no one set it for runs its
own. Also the native agent's default model, resolved once for the settings in force."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from avatar.core.errors import AvatarError

if TYPE_CHECKING:
    from avatar.core.config import Settings


class ModelChoice:
    """The model asked for on each provider (by its canonical name)."""

    def __init__(self, asked: str | None) -> None:
        self._models: dict[str, str | None] = {}
        self._unbound = asked  # asked before any provider opened
        self._native_default: str | None = None  # (resolved when first shown)

    def of(self, provider: str) -> str | None:
        """The model asked for on `provider`, else None (its own)."""
        return self._models.get(provider, self._unbound)

    def claim(self, provider: str) -> None:
        """The model asked for before any provider opened becomes `provider`'s, unless one
        was set there."""
        if provider not in self._models:
            self.use(provider, self._unbound)

    def use(self, provider: str, model: str | None) -> None:
        """Ask for `model` on `provider` from its next session on (None: its own choice)."""
        self._models[provider] = model
        self._unbound = None

    def native_default(self, settings: Settings, env: Mapping[str, str]) -> str | None:
        """The native agent's default model (`provider/id`); None without credentials for
        any model."""
        if self._native_default is None:
            from avatar.native.models import ModelResolver  # the catalog: not for a listing

            try:
                resolved = ModelResolver.from_settings(settings, env).resolve(None).full_id
            except AvatarError:  # no credentials for any model: nothing to name
                resolved = ""
            self._native_default = resolved
        return self._native_default or None

    def settings_changed(self) -> None:
        """Other settings are in force: the native default is resolved again."""
        self._native_default = None
