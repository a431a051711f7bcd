"""THE session id syntax: every provider's ids and prefixes, and native session ids alike.

An id may become a file name (a native session `<id>.jsonl`, avatar's record of a session's
turns), so it has no path separators, no NUL, no leading dot (hidden files, `..`), no `..`
anywhere and is not itself a `.jsonl` file name. `:` is allowed: some agents put one in their
ids, and POSIX file names may hold it.
"""

from __future__ import annotations

import os
import re

from avatar.core.errors import UsageError

try:  # CPython's own SHA-256: `hashlib` loads OpenSSL (~4 ms of every listing) for a digest
    from _sha256 import sha256 as _sha256  # type: ignore[import-not-found]
except ImportError:  # other Pythons (3.12 calls it _sha2)
    from hashlib import sha256 as _sha256

# Ids of every provider are UUIDs, ULIDs or similar; nothing that could name a path.
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
#: A UUID (Claude Code, codex and Gemini CLI name their sessions, and their files, by one).
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)

#: What a valid id looks like, for error messages where the user chose the id.
ID_RULE = (
    "use up to 128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit "
    "(no path separators, no '..')"
)


def is_valid_id(text: str) -> bool:
    """True for a plausible session id or id prefix (see the module docstring)."""
    return bool(_ID.fullmatch(text)) and ".." not in text and not text.endswith(".jsonl")


def check_id(text: str, *, explain: bool = False) -> str:
    """Return `text` if it is a valid id or prefix, else raise a UsageError.

    With `explain`, the error also says what a valid id looks like (for ids the user makes up).
    """
    if not is_valid_id(text):
        rule = f": {ID_RULE}" if explain else ""
        raise UsageError(f"invalid session id {text!r}{rule}")
    return text


def sha256_hex(text: str | bytes) -> str:
    """The SHA-256 of `text` (UTF-8) or of bytes, in hex: what names a project's directory
    (native sessions, and Gemini CLI's older project directories) and what `avatar trust`
    records of a config file."""
    data = text.encode() if isinstance(text, str) else text
    digest: str = _sha256(data).hexdigest()
    return digest


def new_uuid() -> str:
    """A new random UUID (version 4) as text, as `str(uuid.uuid4())` makes it, without the
    `uuid` module (~8 ms to import, before a one-shot's claude could start)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
