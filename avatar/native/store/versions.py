"""Versions of the native session format: newer files refused, older ones migrated on read.

The header's `version` says which shape the file's lines have (`FORMAT_VERSION` is what this
avatar writes). A file from a newer avatar is refused with one clear line — reading it with
old rules could drop what it holds, and appending old-shaped lines would damage it. A file
from an older avatar is read through `migrate_entry`, line by line in memory; the file itself
is not rewritten (it stays the source of truth, and rewriting would break the lock of a
process that has it open). Lines appended later are current-shaped, so every migration step
leaves a current line unchanged.

Version 0 is the shape before headers carried a version: the header named the session
`session_id` and its creation time `timestamp`; a message entry held its text in `content`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from avatar.core.errors import AvatarError
from avatar.native.store.entries import FORMAT_VERSION, Entry, SessionHeader, entry_parser


class NewerFormatError(AvatarError, ValueError):
    """A session file written by a newer avatar than this one (exit 1, one line)."""


def header_version(data: dict[str, Any]) -> int:
    """The format version a parsed header line declares (absent: 0)."""
    version = data.get("version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ValueError(f"bad format version {version!r}")
    return version


def read_header(path: Path, line: bytes) -> tuple[SessionHeader, int]:
    """The header of the file at `path` (its first line) and the version it was written in.

    Raises `NewerFormatError` for a newer version, ValueError when it is not a header.
    """
    data = json.loads(line)
    if not isinstance(data, dict) or data.get("type") != "session":
        raise ValueError("not a session header")
    version = header_version(data)
    if version > FORMAT_VERSION:
        sid = data.get("id") or path.stem
        raise NewerFormatError(
            f"session {sid} was written by a newer avatar (format version {version}; this "
            f"avatar reads up to {FORMAT_VERSION}): upgrade avatar to open it"
        )
    if version < FORMAT_VERSION:
        data = migrate_header(data)
    return SessionHeader.model_validate(data), version


def migrate_header(data: dict[str, Any]) -> dict[str, Any]:
    """A version-0 header in the current shape."""
    out = dict(data)
    if "id" not in out and "session_id" in out:
        out["id"] = out.pop("session_id")
    if "created" not in out and "timestamp" in out:
        out["created"] = out.pop("timestamp")
    out["version"] = FORMAT_VERSION
    return out


def migrate_entry(data: dict[str, Any]) -> dict[str, Any]:
    """A version-0 entry in the current shape (a current entry is returned as it is)."""
    if data.get("type") == "message" and "text" not in data and "content" in data:
        data = dict(data)
        content = data.pop("content")
        if isinstance(content, list):  # a list of text parts
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        data["text"] = content if isinstance(content, str) else ""
    return data


def parser_for(version: int) -> Callable[[str | bytes], Entry]:
    """The entry parser for lines of a file of `version` (the fast one for current files)."""
    parse = entry_parser()
    if version >= FORMAT_VERSION:
        return parse

    def parse_old(line: str | bytes) -> Entry:
        data = json.loads(line)
        if not isinstance(data, dict):
            raise ValueError("not an entry")
        return parse(json.dumps(migrate_entry(data)))

    return parse_old


def migrate_line(line: bytes, version: int) -> bytes:
    """An entry line of a `version` file as a current-shaped line (for copying into a fork)."""
    if version >= FORMAT_VERSION:
        return line
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("not an entry")
    return json.dumps(migrate_entry(data), separators=(",", ":")).encode() + b"\n"
