"""A listing cache keyed by each session file's size and mtime, in `$AVATAR_HOME/cache/`.

Agents only ever append to their session files, so a file whose size and modification time are
unchanged still has the summary computed last time: listing then costs one `stat` per session.
The files stay the source of truth; deleting the cache only makes the next listing slower.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from avatar.core.fileio import atomic_write

# Bump when a reader's summary logic changes, so old entries are recomputed.
CACHE_VERSION = 4  # 3: summaries carry `name`; 4: secrets masked in titles


class ListingCache:
    """Per-file summaries of one store, loaded lazily and saved only when something changed."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._entries: dict[str, dict[str, Any]] | None = None
        self._seen: set[str] = set()
        self._dirty = False

    def _load(self) -> dict[str, dict[str, Any]]:
        if self._entries is None:
            self._entries = {}
            if self.path is not None:
                try:
                    data = json.loads(self.path.read_bytes())
                except (OSError, ValueError):
                    data = None
                if isinstance(data, dict) and data.get("version") == CACHE_VERSION:
                    entries = data.get("entries")
                    if isinstance(entries, dict):
                        self._entries = entries
        return self._entries

    def get(self, file: str, st: os.stat_result) -> dict[str, Any] | None:
        """The summary stored for `file` if its size and mtime still match."""
        self._seen.add(file)
        entry = self._load().get(file)
        if (
            isinstance(entry, dict)
            and entry.get("size") == st.st_size
            and entry.get("mtime_ns") == st.st_mtime_ns
        ):
            summary = entry.get("summary")
            return summary if isinstance(summary, dict) else None
        return None

    def put(self, file: str, st: os.stat_result, summary: dict[str, Any]) -> None:
        """Remember the summary of `file` at its current size and mtime."""
        self._seen.add(file)
        self._load()[file] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "summary": summary}
        self._dirty = True

    def forget(self, file: str) -> None:
        """Drop the entry of a deleted file."""
        if self._load().pop(file, None) is not None:
            self._dirty = True

    def prune(self, root: str) -> None:
        """Drop entries under `root` that this listing did not see (their files are gone)."""
        prefix = root.rstrip(os.sep) + os.sep
        entries = self._load()
        stale = [k for k in entries if k.startswith(prefix) and k not in self._seen]
        for key in stale:
            del entries[key]
        if stale:
            self._dirty = True

    def save(self) -> None:
        """Write the cache atomically if it changed; failure (read-only home) is harmless."""
        if not self._dirty or self.path is None or self._entries is None:
            return
        self._dirty = False
        data = json.dumps(
            {"version": CACHE_VERSION, "entries": self._entries},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        with contextlib.suppress(OSError):
            atomic_write(self.path, data.encode())
