"""Naming a session (`avatar session rename`, REPL `/rename`), written where its provider shows it.

The provider's store writes the name in its own files where the provider shows names
(`SessionStore.rename`: Claude Code's `custom-title` entry, codex's `thread_name` line and its
state database's thread name, Gemini CLI's `summary` record, a native `title` entry); other
ACP agents keep none avatar could write, so avatar's own record carries the name.

Avatar's record gets the name in every case: `session list`, the picker and search show it
for any provider, and a name the provider's own files hold later (a rename inside Claude
Code) still wins over it.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from avatar.core.errors import NotSupportedError, UsageError

if TYPE_CHECKING:
    from avatar.library.catalog import Catalog
    from avatar.sessions.types import SessionInfo

NAME_CHARS = 200


def clean_name(name: str) -> str:
    """`name` on one line; a usage error when empty or too long."""
    text = " ".join(name.split())
    if not text:
        raise UsageError("the name is empty")
    if len(text) > NAME_CHARS:
        raise UsageError(f"the name is longer than {NAME_CHARS} characters")
    return text


def rename(catalog: Catalog, info: SessionInfo, name: str) -> SessionInfo:
    """Give session `info` the name `name`; returns the session as now named."""
    name = clean_name(name)
    store = catalog.store(info.provider)
    if store is not None:
        with contextlib.suppress(NotSupportedError):  # then avatar's record alone names it
            store.rename(info, name)
    catalog.records().name(info.provider, info.id, name)
    info.name = name
    return info
