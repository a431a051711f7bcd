"""How the search index knows what changed: the stamp (size and modification time) of each
session file, taken without reading any."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from avatar.core.fileio import regular_file
from avatar.sessions.types import SessionInfo

if TYPE_CHECKING:
    from avatar.library.catalog import Catalog

Stamp = tuple[int, int]


def stamp(path: str | None) -> Stamp | None:
    """The stamp of file `path`; None when there is none."""
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def session_stamp(info: SessionInfo) -> Stamp:
    """The stamp of a listed session: its file's."""
    # A session without a file (or whose file vanished) is known by its count and time.
    found = stamp(info.path)
    if found is not None:
        return found
    when = info.updated or info.created
    return (info.messages, int(when.timestamp() * 1e9) if when else 0)


def snapshot(catalog: Catalog) -> tuple[dict[str, Stamp], list[SessionInfo]]:
    """The stamp of every file of the stores that name their session files (found without
    reading any: native sessions too, whose index is cheap to read but needs pydantic), and
    the sessions of the other stores (whose listing is cheap)."""
    files: dict[str, Stamp] = {}
    light: list[SessionInfo] = []
    for name in catalog.listing_providers():
        store = catalog.store(name)
        if store is None:
            continue
        paths = store.session_files(None)
        if paths is None:
            light.extend(store.list(None))
            continue
        for path in paths:
            st, why = regular_file(path)
            if st is not None:
                files[path] = (st.st_size, st.st_mtime_ns)
            elif why is not None:  # (the listing that reads it would say the same)
                store.warn([f"{path}: unreadable, skipped ({why})"])
    return files, light


def stamp_rows(files: dict[str, Stamp]) -> Iterator[tuple[str, int, int]]:
    """The rows of the index's `files` table."""
    for path, (size, mtime) in files.items():
        yield path, size, mtime
