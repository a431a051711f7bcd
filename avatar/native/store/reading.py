"""Reading a native session file: its entries (`iter_file`), its folded state (`read_state`),
and the index record rebuilt from it (`scan_record`, `index_record`) — what listing falls back
to when an index line is stale or missing, so the index only needs the entry parser then."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from avatar.core.fileio import open_regular
from avatar.core.times import parse_time
from avatar.native.agent.context import SessionState, derive_title
from avatar.native.store.entries import (
    KNOWN_TYPES,
    Entry,
    MessageEntry,
    ModelChangeEntry,
    SessionHeader,
    SteeringEntry,
    TitleEntry,
    parse_entry,
)
from avatar.native.store.index_record import IndexRecord
from avatar.native.store.versions import NewerFormatError, parser_for, read_header


def iter_file(path: Path, warnings: list[str] | None = None) -> Iterator[SessionHeader | Entry]:
    """The header, then every readable entry; broken, torn or unknown lines are skipped.

    Each skip adds a one-line message to `warnings`. A file whose first line is not a header
    raises ValueError.
    """
    with open_regular(path) as f:
        header, version = file_header(path, f)
        parse = parser_for(version)
        yield header
        for lineno, line in enumerate(f, 2):
            try:
                entry = parse(line)
            except ValueError:
                if warnings is not None:
                    warnings.append(_skipped(path, lineno, line))
                continue
            yield entry


def file_header(path: Path, f: BinaryIO) -> tuple[SessionHeader, int]:
    """The header of the session file open as `f`, and its format version."""
    # The header and the format version the file was written in (see avatar.native.store.versions:
    # a newer version is refused, an older one read through a migrating parser).
    try:
        return read_header(path, f.readline())
    except NewerFormatError:
        raise
    except ValueError:
        raise ValueError(f"{path}: not a native session file (bad header)") from None


def _skipped(path: Path, lineno: int, line: bytes) -> str:
    """The warning for a line of a session file that loading passes over."""
    return f"{path.name}:{lineno}: {_why_bad(line)}; skipped"


def _why_bad(line: bytes) -> str:
    import json

    if not line.endswith(b"\n"):
        return "torn last line (interrupted write)"
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return "broken line"
    if isinstance(data, dict) and data.get("type") not in (None, *KNOWN_TYPES):
        return f"unknown entry type {data.get('type')!r}"
    return "invalid entry"


def read_state(path: Path) -> SessionState:
    """Fold a session file into its `SessionState` (the resume path).

    The loop is written out (no generator) because it is the cost of resuming a long session.
    """
    with open_regular(path) as f:
        header, version = file_header(path, f)
        parse = parser_for(version)
        state = SessionState(header)
        apply = state.apply
        lineno = 1
        for line in f:
            lineno += 1
            try:
                entry = parse(line)
            except (ValueError, RecursionError):  # (nested deeper than json can read)
                state.warnings.append(_skipped(path, lineno, line))
                continue
            apply(entry)
    return state


def scan_record(path: Path, base: IndexRecord | None = None) -> IndexRecord | None:
    """Rebuild an index record from a file; with `base`, read only what was appended since.

    Returns None when the file is not a session file.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if base is not None and 0 < base.size < size:
        record = dataclasses.replace(base)
        try:
            with open_regular(path) as f:
                f.seek(base.size)
                _fold_tail(record, f)
        except OSError:
            return None
        record.size = size
        return record
    try:
        state = read_state(path)
    except NewerFormatError:
        return _newer_record(path, size)
    except (OSError, ValueError, StopIteration, RecursionError):
        return None
    return index_record(state, size)


def _newer_record(path: Path, size: int) -> IndexRecord | None:
    # A file of a newer format is still listed (from its header alone), so that opening it
    # gives the clear "written by a newer avatar" error instead of "no such session".
    import json

    with open_regular(path) as f:
        data = json.loads(f.readline())
    sid = data.get("id")
    if not isinstance(sid, str):
        return None
    cwd = data.get("cwd")
    created = parse_time(data.get("created"))
    return IndexRecord(
        id=sid,
        cwd=cwd if isinstance(cwd, str) else None,
        title="(written by a newer avatar)",
        created=created,
        updated=created,
        size=size,
    )


def index_record(state: SessionState, size: int) -> IndexRecord:
    """The index record describing a session state at file size `size`."""
    return IndexRecord(
        id=state.header.id,
        cwd=state.header.cwd,
        title=state.display_title,
        created=parse_time(state.header.created),
        updated=parse_time(state.updated),
        messages=state.message_count,
        model=state.model,
        parent_id=state.header.parent_id,
        size=size,
    )


def _fold_tail(record: IndexRecord, f: BinaryIO) -> None:
    for line in f:
        if not line.endswith(b"\n"):
            break
        try:
            entry = parse_entry(line)
        except (ValueError, RecursionError):
            continue
        record.updated = parse_time(entry.timestamp)
        if isinstance(entry, MessageEntry):
            record.messages += 1
            if entry.role == "user" and not record.title:
                record.title = derive_title(entry.text)
            if entry.model:
                record.model = entry.model
        elif isinstance(entry, SteeringEntry):
            record.messages += 1
        elif isinstance(entry, ModelChangeEntry):
            record.model = entry.model
        elif isinstance(entry, TitleEntry):
            record.title = entry.title
