"""Where sessions came from and what came of them: handoffs and imports from avatar's records
(docs/design.md §9), native forks from the native index. Keys and links are `provider/id`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from avatar.sessions.records import SessionRecords


@dataclass
class Links:
    """One session's lineage."""

    parent: str | None = None
    children: list[str] = field(default_factory=list)


def lineage(records: SessionRecords, avatar_home: Path, native: list[str]) -> dict[str, Links]:
    """The links of every session that has any, by `provider/id`; `native` names the
    providers reading the native store (their forks link by the index's `parent_id`)."""
    out: dict[str, Links] = {}

    def add(child: str, parent: str) -> None:
        out.setdefault(child, Links()).parent = parent
        kids = out.setdefault(parent, Links()).children
        if child not in kids:
            kids.append(child)

    for (provider, sid), record in records.all().items():
        key = f"{provider}/{sid}"
        if isinstance(parent := record.get("parent"), str):
            add(key, parent)
    for sid, parent in _native_forks(avatar_home) if native else ():
        for name in native:
            add(f"{name}/{sid}", f"{name}/{parent}")
    return out


def _native_forks(avatar_home: Path) -> list[tuple[str, str]]:
    """`(id, parent id)` of the native forks, from the per-project index files. Only lines
    naming a parent are parsed: listing thousands of sessions must not pay for this twice."""
    from avatar.native.store.index import INDEX_NAME, SessionIndex

    latest: dict[str, str | None] = {}
    for project in SessionIndex(avatar_home).project_dirs():
        index = project / INDEX_NAME
        try:
            data = index.read_bytes()
        except OSError:
            continue
        for line in data.splitlines():
            if b'"parent_id":"' not in line:
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and isinstance(rec.get("id"), str):
                parent = rec.get("parent_id")
                latest[rec["id"]] = None if rec.get("deleted") else parent
    return [(sid, p) for sid, p in latest.items() if isinstance(p, str)]
