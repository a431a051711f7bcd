"""Which model each provider runs (docs/design.md §4). A model asked for is one provider's, never
the next's: `-m` or a preset's model waits for the first provider opened (`claim`), a session's
settings or `/model` set it for one provider (`use`), and a provider no one set it for runs its
own (`default`, where avatar can tell before the agent starts)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from avatar.core.errors import AvatarError
from avatar.providers.facts import configured_model

if TYPE_CHECKING:
    from avatar.core.config import Settings
    from avatar.providers.registry import ProviderRegistry


class ModelChoice:
    """The model asked for on each provider (`engine.models`). A provider is named as the
    registry knows it, by any name it answers to."""

    def __init__(
        self,
        asked: str | None,
        registry: ProviderRegistry,
        settings: Callable[[], Settings],
        env: Mapping[str, str],
    ) -> None:
        self._registry = registry
        self._settings = settings  # (the engine's settings in force: a preset changes them)
        self._env = env
        self._models: dict[str, str | None] = {}
        self._unbound = asked  # asked before any provider opened
        self._native_default: str | None = None  # (resolved when first shown)

    def _name(self, provider: str) -> str:
        return self._registry.spec(provider).name

    def of(self, provider: str) -> str | None:
        """The model asked for on `provider`: the one set there (`-m` or a preset for the
        first provider opened, the session's settings, `set_model`), else None (its own)."""
        return self._models.get(self._name(provider), self._unbound)

    def claim(self, provider: str) -> None:
        """The model asked for before any provider opened becomes `provider`'s, unless one
        was set there."""
        if self._name(provider) not in self._models:
            self.use(provider, self._unbound)

    def use(self, provider: str, model: str | None) -> None:
        """Ask for `model` on `provider` from its next session on (None: its own choice)."""
        self._models[self._name(provider)] = model
        self._unbound = None

    def default(self, provider: str) -> str | None:
        """The model `provider` runs when none is asked for, where avatar can tell before the
        agent starts: its table's `model`, the one its own settings name, or the native
        agent's default (`provider/id`; None without credentials for any model)."""
        spec = self._registry.spec(provider)
        if spec.model or spec.transport != "native":
            return spec.model or configured_model(spec, self._env)
        if self._native_default is None:
            from avatar.native.models import ModelResolver  # the catalog: not for a listing

            try:
                resolver = ModelResolver.from_settings(self._settings(), self._env)
                resolved = resolver.resolve(None).full_id
            except AvatarError:  # no credentials for any model: nothing to name
                resolved = ""
            self._native_default = resolved
        return self._native_default or None

    def settings_changed(self) -> None:
        """Other settings are in force: the native default is resolved again."""
        self._native_default = None
