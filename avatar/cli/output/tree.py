"""`session list --tree`: sessions under the ones they were handed over or forked from."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from avatar.sessions.types import SessionInfo


def lineage_order(
    sessions: list[SessionInfo], parents: Mapping[str, str | None]
) -> list[tuple[int, SessionInfo]]:
    """`(depth, session)` in tree order: roots in the given (newest-first) order, each
    followed by its descendants, oldest child first. `parents` maps `provider/id` to the
    parent's `provider/id`; a session whose parent is not among `sessions` is a root."""
    key = {f"{s.provider}/{s.id}": s for s in sessions}
    kids: dict[str, list[SessionInfo]] = {}
    roots = []
    for s in sessions:
        parent = parents.get(f"{s.provider}/{s.id}")
        if parent in key and parent != f"{s.provider}/{s.id}":
            kids.setdefault(parent, []).append(s)
        else:
            roots.append(s)
    out: list[tuple[int, SessionInfo]] = []
    seen: set[str] = set()

    def walk(s: SessionInfo, depth: int) -> None:
        k = f"{s.provider}/{s.id}"
        if k in seen:  # a damaged record could make a cycle
            return
        seen.add(k)
        out.append((depth, s))
        for child in reversed(kids.get(k, [])):  # sessions come newest first
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    return out


def tree_title(depth: int, title: str) -> str:
    """A title indented under its parent."""
    return ("  " * (depth - 1) + "└─ " if depth else "") + title
