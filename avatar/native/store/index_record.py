"""One line of a native project's index (`native/index.py`), and reading an index file.

The index is a file on disk, so its lines are checked as they are read: each line avatar
wrote holds exactly the types its fields declare, and is made into its record directly
(`avatar.core.exact`); anything else (a line of a newer avatar with more fields, a hand-edited
one) is left to pydantic, which converts it or refuses it. So `avatar session list` does not
load pydantic (~40 ms) for a project of native sessions. Where pydantic is the faster reader
(loaded already, or a very large index), it reads the whole file, with the same result.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.core import exact
from avatar.sessions.types import SessionInfo

if TYPE_CHECKING:
    from pydantic import TypeAdapter

#: The fields written as ISO-8601 text.
_TIMES = ("created", "updated")


@dataclass
class IndexRecord:
    """One line of a project's index: what `session list` shows, plus bookkeeping."""

    id: str
    provider: str = "native"
    cwd: str | None = None
    title: str | None = None
    created: datetime | None = None
    updated: datetime | None = None
    messages: int = 0
    model: str | None = None
    path: str | None = None  # where the file is (not written: the index is beside it)
    parent_id: str | None = None
    size: int = 0  # file size when indexed; a different size means the record is stale
    deleted: bool = False

    def to_info(self, provider: str = "native") -> SessionInfo:
        """The session as listing shows it, under provider name `provider`."""
        return SessionInfo(
            id=self.id,
            provider=provider,
            cwd=self.cwd,
            title=self.title,
            created=self.created,
            updated=self.updated,
            messages=self.messages,
            model=self.model,
            path=self.path,
        )

    def line(self) -> bytes:
        """The record as one JSONL line with its newline (fields left at None not written)."""
        data: dict[str, Any] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is None or field.name == "path":
                continue
            data[field.name] = value.isoformat() if isinstance(value, datetime) else value
        try:
            return json.dumps(data, ensure_ascii=False).encode() + b"\n"
        except UnicodeEncodeError:  # (a lone surrogate in a title: written as its escape)
            return json.dumps(data).encode() + b"\n"


#: From this many lines on, pydantic reads an index faster than the lines are checked here,
#: its import included (~4 µs a line in bulk against ~10; ~50 ms to load it); and once it is
#: loaded (a server, any command that validated a file), it always does.
PYDANTIC_FROM = 8000


def _written_time(stamp: str) -> datetime | str:
    """A time as avatar writes it (`isoformat`, or pydantic's `Z` for UTC) read; any other
    text is left as it is, for pydantic."""
    try:
        parsed = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    written = parsed.isoformat()
    return parsed if stamp in (written, written.replace("+00:00", "Z")) else stamp


def _record(data: Any) -> IndexRecord | None:
    """The record of one parsed line: directly when exact, else as pydantic checks it."""
    if type(data) is dict:
        exact_data = dict(data)
        for name in _TIMES:
            stamp = exact_data.get(name)
            if type(stamp) is str:
                exact_data[name] = _written_time(stamp)
        made = exact.build(IndexRecord, exact_data)
        if made is not None:
            return made
    from pydantic import ValidationError

    try:
        record: IndexRecord = _adapter(IndexRecord).validate_python(data)
    except ValidationError:
        return None
    return record


@cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    """pydantic's checker of `kind` (made once: its schema is built on the first use)."""
    from pydantic import TypeAdapter

    return TypeAdapter(kind)


def read_index(path: Path) -> list[IndexRecord]:
    """Every record of an index file, oldest first; unreadable lines are skipped."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    lines = [line for line in data.split(b"\n") if line.strip()]
    if "pydantic" in sys.modules or len(lines) > PYDANTIC_FROM:
        return records_checked(lines)
    return records_of(lines)


def records_of(lines: list[bytes]) -> list[IndexRecord]:
    """The records of an index's lines, each made directly when exactly typed (pydantic
    reads the others); torn lines skipped."""
    try:  # (as one JSON array: one call for every line; line by line when one is torn)
        parsed: list[Any] = json.loads(b"[" + b",".join(lines) + b"]")
    except (ValueError, RecursionError):
        parsed = []
        for line in lines:
            try:
                parsed.append(json.loads(line))
            except (ValueError, RecursionError):
                continue  # a torn or foreign line: the files will tell
    return [record for item in parsed if (record := _record(item)) is not None]


def records_checked(lines: list[bytes]) -> list[IndexRecord]:
    """The records of an index's lines as pydantic reads them: in bulk (one call into
    pydantic-core for the whole file), line by line only when that fails."""
    try:
        whole = b"[" + b",".join(lines) + b"]"
        records: list[IndexRecord] = _adapter(list[IndexRecord]).validate_json(whole)
    except ValueError:
        return [r for line in lines if (r := _checked_line(line)) is not None]
    return records


def _checked_line(line: bytes) -> IndexRecord | None:
    try:
        record: IndexRecord = _adapter(IndexRecord).validate_json(line)
    except ValueError:
        return None  # a torn or foreign line: the files will tell
    return record
