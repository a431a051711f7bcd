"""What each session was started with (docs/design.md §4), applied: resuming a session applies, in
order, the config as it is now, the session's preset as the config defines it now, the
session's overrides (kept by `avatar.sessions.settings_log`), this run's flags.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.core.errors import AvatarError

if TYPE_CHECKING:
    from avatar.core.config import Settings
    from avatar.engine.config_layers import ProjectConfig
    from avatar.sessions.settings_log import SessionSettingsLog

#: The settings a run can give on its command line (or in the REPL) and a session keeps.
OVERRIDABLE = ("model", "permission", "system_prompt")


@dataclass
class SettingsSource:
    """How this run's settings were made, so a resumed session can get its own instead.

    `flags` are the overridable settings given on the command line, `preset_given` whether
    `--preset` was, and `load(preset, overrides)` builds settings from the config files as
    they are now with that preset and those overrides laid over them.
    """

    load: Callable[[str | None, Mapping[str, Any]], Settings]
    flags: dict[str, Any] = field(default_factory=dict)
    preset_given: bool = False
    preset: str | None = None  # the `--preset` of this run
    #: The project's `.avatar.yaml` as the last `load` found it, when keys of it were ignored
    #: because nobody trusted it (`avatar.engine.config_layers`).
    untrusted: ProjectConfig | None = None
    #: `--trust`: the project's files (its `.avatar.yaml`, the agents' own config in it) are
    #: trusted for this run.
    trust: bool = False

    @classmethod
    def from_files(
        cls,
        cwd: Path,
        config_file: Path | None,
        flags: Mapping[str, Any],
        preset: str | None,
        providers: Collection[str] | None = None,
        *,
        trust: bool = False,
        home: Path | None = None,
    ) -> SettingsSource:
        """Settings from the layered config files of docs/design.md §4, read again at every `load`
        (a resumed session gets the config as it is now); `providers`: the built-in ones'
        names, against which presets are checked; `trust` applies the project file whole
        (`--trust`), `home` holds the store of trusted files."""
        from avatar.engine.config_layers import load_config

        def load(preset_name: str | None, overrides: Mapping[str, Any]) -> Settings:
            loaded = load_config(
                cwd,
                config_file,
                dict(overrides),
                preset_name,
                providers=providers,
                trust=trust,
                home=home,
            )
            source.untrusted = loaded.untrusted
            return loaded.settings

        source = cls(
            load=load,
            flags=dict(flags),
            preset_given=preset is not None,
            preset=preset,
            trust=trust,
        )
        return source

    def initial(self) -> Settings:
        """This run's settings: the config, `--preset`, then the flags."""
        return self.load(self.preset, {k: v for k, v in self.flags.items() if v is not None})

    def given(self) -> dict[str, Any]:
        """The overridable flags this run was given."""
        return {k: v for k, v in self.flags.items() if k in OVERRIDABLE and v is not None}


def overrides_of(settings: Settings, base: Settings) -> dict[str, str]:
    """The overridable settings in which `settings` differs from `base` (its preset's)."""
    out: dict[str, str] = {}
    for key in OVERRIDABLE:
        value = getattr(settings, key)
        if value is not None and value != getattr(base, key):
            out[key] = str(value)
    return out


@dataclass
class Adopted:
    """What resuming a session with a record means for this run's settings."""

    settings: Settings
    #: Set when the session's preset is gone from the config (said as a warning notice).
    warning: str | None = None


class SettingsPolicy:
    """The per-session settings rules of docs/design.md §4, kept out of the engine.

    `source` says how this run's settings were made (None: an embedder gave fixed settings,
    and sessions neither record nor adopt anything).
    """

    def __init__(self, source: SettingsSource | None, avatar_home: Path) -> None:
        self.source = source
        self._home = avatar_home
        # The settings the open session sets itself (flags, then its record when resumed).
        self.own: dict[str, Any] = source.given() if source is not None else {}

    @cached_property
    def log(self) -> SessionSettingsLog:
        """The sessions' records (loaded when first used: a cold one-shot builds this policy
        before its agent starts, and needs the records only after the session opens)."""
        from avatar.sessions.settings_log import SessionSettingsLog

        return SessionSettingsLog(self._home)

    def remember(
        self, settings: Settings, model: str | None, provider: str, session_id: str, fresh: bool
    ) -> None:
        """Record the session's preset and the settings in which it differs from that preset.

        `fresh`: the session was just created, so it has no earlier record to replace.
        """
        preset = settings.preset
        overrides: dict[str, str] = {}
        # With nothing of its own (no flags, no record, no `/model`), the settings are the
        # preset's: nothing to compare, and no config file is read again.
        if self.source is not None and (self.own or model != settings.model):
            current = replace(settings, model=model)
            try:
                overrides = overrides_of(current, self.source.load(preset, {}))
            except AvatarError:
                overrides = {}
        if preset is None and not overrides and (fresh or self.log.get(session_id) is None):
            return  # nothing of its own: the config as it is will do (and no file is written)
        from avatar.sessions.settings_log import SessionSettings

        self.log.put(
            SessionSettings(provider=provider, id=session_id, preset=preset, overrides=overrides)
        )

    def adopt(self, settings: Settings, session: str | Callable[[], str | None]) -> Adopted | None:
        """Settings for resuming a session: today's config, the session's preset as the
        config defines it now, its overrides, then this run's flags. None: nothing changes.

        `session` is its id, or a function finding it (called only when records exist).
        """
        if self.source is None or not self.log.path.exists():
            return None
        try:
            session_id = session if isinstance(session, str) else session()
        except AvatarError:
            return None
        record = self.log.get(session_id) if session_id else None
        if record is None:
            return None
        warning = None
        preset = settings.preset if self.source.preset_given else record.preset
        if preset is not None and preset not in settings.presets:
            warning = (
                f"session {record.id} started from preset {preset!r}, which the config no "
                "longer defines; using the config without it"
            )
            preset = None
        own = {**record.overrides, **self.source.given()}
        try:
            adopted = self.source.load(preset, own)
        except AvatarError as e:
            return Adopted(settings, f"settings of session {record.id} not applied: {e}")
        self.own = own
        return Adopted(adopted, warning)
