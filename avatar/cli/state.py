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
        session is a live session of the server (`avatar.server.remote`, `attach`)."""
        from avatar.engine.engine import Engine

        kind = Engine
        if remote:
            from avatar.server.remote import RemoteEngine

            kind = RemoteEngine

        for d in add_dirs:
            if not (self.cwd / d).is_dir():
                raise UsageError(f"--add-dir: no such directory: {d}")
        engine = kind.from_config(
            self.cwd,
            provider=self.provider,
            model=self.model,
            preset=self.preset,
            config_file=self.config,
            permission=permission,
            add_dirs=add_dirs,
            trust=self.trust,
        )
        if engine.untrusted_config is not None:  # said once, before anything starts
            sys.stderr.write(f"notice: {engine.untrusted_config.notice()}\n")
            sys.stderr.flush()
        return engine
