"""One line of a native project's index (`native/index.py`), and reading an index file.

The index is a file on disk, so its lines are checked as they are read: each line avatar
wrote holds exactly the types its fields declare, and is made into its record directly
(`avatar.core.exact`); anything else (a line of a newer avatar with more fields, a hand-edited
one) is left to pydantic, which converts it or refuses it. So `avatar session list` does not
load pydantic (~40 ms) for a project of native sessions.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from datetime import datetime
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


_checker: TypeAdapter[IndexRecord] | None = None


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
    global _checker
    if type(data) is dict:
        exact_data = dict(data)
        for name in _TIMES:
            stamp = exact_data.get(name)
            if type(stamp) is str:
                exact_data[name] = _written_time(stamp)
        made = exact.build(IndexRecord, exact_data)
        if made is not None:
            return made
    from pydantic import TypeAdapter, ValidationError

    if _checker is None:
        _checker = TypeAdapter(IndexRecord)
    try:
        return _checker.validate_python(data)
    except ValidationError:
        return None


def read_index(path: Path) -> list[IndexRecord]:
    """Every record of an index file, oldest first; unreadable lines are skipped."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    out: list[IndexRecord] = []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            parsed = json.loads(line)
        except (ValueError, RecursionError):
            continue  # a torn or foreign line: the files will tell
        record = _record(parsed)
        if record is not None:
            out.append(record)
    return out
