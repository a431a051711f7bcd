"""One line of a native project's index (`native/index.py`), and reading an index file.

The index is a file on disk, so its lines are validated (by pydantic, in bulk) as they are read.
"""

from __future__ import annotations

import builtins
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from avatar.sessions.types import SessionInfo


class IndexRecord(BaseModel):
    """One line of a project's index: what `session list` shows, plus bookkeeping.

    The index is a file on disk, so its lines are validated as they are read.
    """

    # `ignore`: a newer avatar may add fields; an older one still reads the index.
    model_config = ConfigDict(extra="ignore")

    id: str
    provider: str = "native"
    cwd: str | None = None
    title: str | None = None
    created: datetime | None = None
    updated: datetime | None = None
    messages: int = 0
    model: str | None = None
    path: str | None = Field(default=None, exclude=True)  # where the file is; not stored
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


_Records = builtins.list[IndexRecord]

_records: TypeAdapter[list[IndexRecord]] | None = None


def read_index(path: Path) -> _Records:
    """Every record of an index file, oldest first; unreadable lines are skipped.

    The whole file is validated as one JSON array (one call into pydantic-core instead of
    one per line); only when that fails is it read line by line.
    """
    global _records
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    lines = [line for line in data.split(b"\n") if line.strip()]
    if not lines:
        return []
    if _records is None:
        _records = TypeAdapter(list[IndexRecord])
    try:
        return _records.validate_json(b"[" + b",".join(lines) + b"]")
    except ValueError:
        pass
    out: _Records = []
    for line in lines:
        try:
            out.append(IndexRecord.model_validate_json(line))
        except ValueError:
            continue  # a torn or foreign line: the files will tell
    return out
