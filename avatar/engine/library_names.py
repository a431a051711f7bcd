"""The library's names on the engine (docs/design.md §8): thin delegates of `engine.library`
(`avatar.library.library`), so `engine.sessions()` and `engine.library.sessions()` are one."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from avatar.library.archive import Archives
    from avatar.library.library import Deleted, Library
    from avatar.library.search.hits import SearchHit
    from avatar.sessions.types import SessionInfo, Transcript


class LibraryNames:
    """The session library's methods under the engine's own name (`Engine` is one)."""

    library: Library

    def sessions(self, provider: str | None = None, *, any_cwd: bool = False) -> list[SessionInfo]:
        """`library.sessions`: sessions of one provider (every provider when None) in this
        project (or any directory), newest first. No agent is started."""
        return self.library.sessions(provider, any_cwd=any_cwd)

    def find(self, ref: str, provider: str | None = None) -> SessionInfo:
        """`library.find`: the session whose id is `ref` or starts with it."""
        return self.library.find(ref, provider)

    def transcript(self, session: SessionInfo | str) -> Transcript:
        """`library.transcript`: the canonical transcript of a session."""
        return self.library.transcript(session)

    def export(self, session: SessionInfo | str, fmt: str = "md", to: Path | None = None) -> str:
        """`library.export`: a transcript as `md`, `html` or `json`, secrets masked."""
        return self.library.export(session, fmt, to)

    def search(self, query: str, **how: Any) -> list[SearchHit]:
        """`library.search`: sessions whose messages hold every word of `query`."""
        return self.library.search(query, **how)

    def reindex(self) -> int:
        """`library.reindex`: bring the search index up to date."""
        return self.library.reindex()

    def rename(self, ref: SessionInfo | str, name: str) -> SessionInfo:
        """`library.rename`: name a session."""
        return self.library.rename(ref, name)

    def prunable(self, older_than: timedelta, **how: Any) -> list[SessionInfo]:
        """`library.prunable`: sessions last updated longer than `older_than` ago."""
        return self.library.prunable(older_than, **how)

    async def prune(self, sessions: list[SessionInfo]) -> list[tuple[SessionInfo, Deleted | str]]:
        """`library.prune`: delete each session; each with what was done, or why it was
        not."""
        return await self.library.prune(sessions)

    @property
    def archives(self) -> Archives:
        """`library.archives`: sessions packed to move between machines."""
        return self.library.archives

    def warnings(self) -> list[str]:
        """`library.warnings`: what the stores skipped while reading."""
        return self.library.warnings()

    async def delete(
        self, session: SessionInfo | str, *, forget: bool = False, keep_copy: bool = False
    ) -> Deleted:
        """`library.delete`: through its agent, else its store (`avatar.engine.deleting`);
        `forget`: avatar's record only; `keep_copy`: keep avatar's copy of the turns.
        Returns what was done."""
        return await self.library.delete(session, forget=forget, keep_copy=keep_copy)
