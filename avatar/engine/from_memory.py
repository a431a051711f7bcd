"""The engine's one step before it loads: a plain one-shot's claude started from the launch the
last one in the same directory remembered (`avatar.bridges.claude.remembered`; the engine
adopts it, or stops it, when it computes the launch: `avatar.engine.ahead`). Light: it runs
before avatar's config, providers and walls load."""

from __future__ import annotations

import os
import sys


def start(asked: str) -> None:
    """Start claude from memory for `avatar [-p asked] chat PROMPT` here, when what it was
    computed from is as it was; nothing otherwise."""
    if asked not in ("", "claude"):
        return
    home = os.environ.get("AVATAR_HOME")
    if home is None:
        from avatar.core.config import avatar_home

        home = str(avatar_home())
    from avatar.bridges.claude.remembered import start as started

    started(os.path.expanduser(home), os.path.realpath(os.getcwd()), asked)


def discard() -> None:
    """Stop one started from memory that no engine took (the command ended first)."""
    remembered = sys.modules.get("avatar.bridges.claude.remembered")
    if remembered is not None:
        remembered.discard()
