"""Moving a session's files to another project directory (`session import` of an archive):
what every store's `restore` shares. Each store says where its files go and which keys of
its lines name the project directory (`avatar.sessions.store.SessionStore.restore`); the
lines are rewritten here, the rest of a file is kept byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from avatar.core.errors import UsageError
from avatar.sessions.store import FileWrites
from avatar.sessions.types import SessionInfo

#: Changes one JSON line in place; True when it changed something.
Fix = Callable[[dict[str, Any]], bool]


def packed_file(info: SessionInfo) -> Path:
    """The file of a listed session, for an archive; a usage error when it has none."""
    if not info.path:
        raise UsageError(f"{info.provider} session {info.id} has no file to pack")
    return Path(info.path)


def one_file(info: SessionInfo) -> list[tuple[str, Path]]:
    """What an archive carries of a session kept in one file: that file, by its name."""
    path = packed_file(info)
    return [(path.name, path)]


def check_names(
    names: Iterable[str], kind: str, session_id: str, ok: Callable[[str], bool]
) -> None:
    """A usage error for the first archived name `ok` refuses: not a file a `kind` store
    gives session `session_id`."""
    for name in names:
        if not ok(name):
            raise UsageError(
                f"the archive's session/{name} is not a file of {kind} session {session_id}"
            )


def rewrite_lines(data: bytes, fix: Fix) -> bytes:
    """Each JSON line through `fix` (True: it changed it); other lines stay byte for byte."""
    out = []
    for line in data.splitlines(keepends=True):
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            out.append(line)
            continue
        if isinstance(entry, dict) and fix(entry):
            end = b"\n" if line.endswith(b"\n") else b""
            line = json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode() + end
        out.append(line)
    return b"".join(out)


def placed(base: Path, files: Mapping[str, bytes], fix: Fix) -> FileWrites:
    """Each archived file under directory `base` by its name, the lines of the JSONL ones
    through `fix`; other files as they are."""
    return [
        (base / name, rewrite_lines(data, fix) if name.endswith(".jsonl") else data)
        for name, data in files.items()
    ]


def moved(value: Any, old: str | None, new: str) -> Any:
    """`value` under `new` if it is `old` or a path inside it; else unchanged."""
    if not isinstance(value, str) or not old:
        return value
    if value == old:
        return new
    if value.startswith(old.rstrip("/") + "/"):
        return new + value[len(old.rstrip("/")) :]
    return value


def move_key(entry: dict[str, Any], key: str, old: str | None, new: str) -> bool:
    """`entry[key]` moved from project `old` to `new` (see `moved`); True when it changed."""
    if key in entry and (value := moved(entry[key], old, new)) != entry[key]:
        entry[key] = value
        return True
    return False


def set_if_present(entry: dict[str, Any], key: str, value: str) -> bool:
    """`entry[key] = value` where the entry has that key; True when it changed."""
    if key in entry and entry[key] != value:
        entry[key] = value
        return True
    return False
