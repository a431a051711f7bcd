"""Session id checks shared by the CLI, the engine and the stores."""

from __future__ import annotations

import re

from avatar.errors import UsageError

# Ids of every provider are UUIDs, ULIDs or similar; nothing that could name a path.
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")


def is_valid_id(text: str) -> bool:
    """True for a plausible session id or id prefix (no path separators, no `..`)."""
    return bool(_ID.fullmatch(text)) and ".." not in text


def check_id(text: str) -> str:
    """Return `text` if it is a valid id or prefix, else raise a UsageError."""
    if not is_valid_id(text):
        raise UsageError(f"invalid session id {text!r}")
    return text
