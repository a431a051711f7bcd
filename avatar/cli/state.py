"""What every command starts from: the global options (`-p`, `-m`, `--preset`, `-C`, `-c`,
`--trust`), and the engine built from them."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.core.errors import UsageError

if TYPE_CHECKING:
    from avatar.engine.engine import Engine


class AppState:
    """The global options; each command builds its engine from them."""

    def __init__(
        self,
        provider: str | None = None,
        model: str | None = None,
        preset: str | None = None,
        cwd: Path | None = None,
        config: Path | None = None,
        trust: bool = False,
    ) -> None:
        self.provider, self.model, self.preset = provider, model, preset
        self.cwd = cwd or Path.cwd()
        self.config = config
        self.trust = trust  # `--trust`: the project's .avatar.yaml applies whole this run

    def engine(
        self, *, permission: str | None = None, add_dirs: Sequence[Path] = (), remote: bool = False
    ) -> Engine:
        """An engine over the layered config with this run's flags (an unknown `-p` or
        `--preset` is a usage error here, before anything starts); `remote`: one whose open
        session is a live session of the server (`avatar.server.remote`, `attach`). The one
        `prebuild` made is taken when it was built from the same options."""
        plain = permission is None and not (add_dirs or remote)
        engine = _take_prebuilt(self, plain)
        if engine is None:
            engine = self.build(permission, add_dirs, remote)
        if engine.untrusted_config is not None:  # said once, before anything starts
            sys.stderr.write(f"notice: {engine.untrusted_config.notice()}\n")
            sys.stderr.flush()
        return engine

    def build(
        self, permission: str | None = None, add_dirs: Sequence[Path] = (), remote: bool = False
    ) -> Engine:
        """`engine()`, built now and nothing said (`prebuild`)."""
        from avatar.engine.engine import Engine

        kind = Engine
        if remote:
            from avatar.server.remote import RemoteEngine

            kind = RemoteEngine

        for d in add_dirs:
            if not (self.cwd / d).is_dir():
                raise UsageError(f"--add-dir: no such directory: {d}")
        return kind.from_config(
            self.cwd,
            provider=self.provider,
            model=self.model,
            preset=self.preset,
            config_file=self.config,
            permission=permission,
            add_dirs=add_dirs,
            trust=self.trust,
        )

    @property
    def options(self) -> tuple[object, ...]:
        """The global options, as one value (an engine built early is taken on a match)."""
        return (self.provider, self.model, self.preset, self.cwd, self.config, self.trust)


#: The engine `prebuild` made, and the options it was made from; None once taken or discarded.
_prebuilt: tuple[AppState, Engine] | None = None


def prebuild(state: AppState) -> bool:
    """Build `state`'s engine for a one-shot `chat` and start its agent now
    (`Engine.launch_ahead`), for `AppState.engine` to take (`avatar.cli.early`); True when it
    did. Nothing is said here: a failure leaves the command to build it again, and to fail as
    it does."""
    global _prebuilt
    discard_prebuilt()
    try:
        engine = state.build()
    except Exception:
        return False
    engine.one_shot = True
    plain = state.model is None and state.preset is None and state.config is None
    try:
        engine.launch_ahead(remember=plain and state.cwd == Path.cwd().resolve())
    except Exception:
        engine.ahead.stop()
        return False
    _prebuilt = (state, engine)
    return True


def _take_prebuilt(state: AppState, plain: bool) -> Engine | None:
    """The prebuilt engine when `state` has the options it was built from and the command
    asks for nothing more (`plain`); else it is stopped: it was built for another command."""
    global _prebuilt
    if _prebuilt is None:
        return None
    made, engine = _prebuilt
    _prebuilt = None
    if plain and made.options == state.options:
        return engine
    engine.ahead.stop()
    return None


def discard_prebuilt() -> None:
    """Stop the agent of a prebuilt engine no command took (the command ended first)."""
    global _prebuilt
    if _prebuilt is not None:
        engine = _prebuilt[1]
        _prebuilt = None
        engine.ahead.stop()
