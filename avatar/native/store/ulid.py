"""A tiny ULID generator: 26 Crockford base32 characters, sortable by creation time.

48 bits of milliseconds then 80 random bits; within one millisecond the random part is
incremented, so ids made by one process sort in creation order.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_DECODE = {c: i for i, c in enumerate(_ALPHABET)}
_RANDOM_MAX = (1 << 80) - 1
_lock = threading.Lock()
_last_ms = -1
_last_rand = 0


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        value, rem = divmod(value, 32)
        chars.append(_ALPHABET[rem])
    return "".join(reversed(chars))


def new_ulid(now_ms: int | None = None) -> str:
    """A new ULID; monotonic within this process."""
    global _last_ms, _last_rand
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    with _lock:
        if ms <= _last_ms:
            ms = _last_ms
            _last_rand = (_last_rand + 1) & _RANDOM_MAX
        else:
            _last_ms = ms
            _last_rand = int.from_bytes(os.urandom(10), "big")
        rand = _last_rand
    return _encode(ms, 10) + _encode(rand, 16)


def ulid_time(ulid: str) -> datetime | None:
    """The creation time encoded in a ULID, or None when `ulid` is not one."""
    if len(ulid) != 26:
        return None
    ms = 0
    for c in ulid[:10].upper():
        if c not in _DECODE:
            return None
        ms = ms * 32 + _DECODE[c]
    return datetime.fromtimestamp(ms / 1000, tz=UTC)
