"""The engine's session-library operations (DESIGN §8): `search`, `reindex`, `rename`,
`prunable`, `prune`.

The engine holds one `LibraryActions` and offers its methods as its own (`engine.search` …);
each is a thin call into the module doing the work (`avatar.library.search.index`,
`avatar.library.renaming`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.core.errors import AvatarError

if TYPE_CHECKING:
    from avatar.library.catalog import SessionLibrary
    from avatar.library.search.hits import SearchHit
    from avatar.library.search.index import SearchIndex
    from avatar.providers.registry import ProviderSpec
    from avatar.sessions.types import SessionInfo


class LibraryActions:
    """Search, name and prune the sessions of every provider, for one project."""

    def __init__(
        self,
        library: SessionLibrary,
        cwd: Path,
        home: Path,
        spec: Callable[[str], ProviderSpec],
        current: Callable[[], str | None],
        delete: Callable[[SessionInfo], Awaitable[SessionInfo]],
    ) -> None:
        self.library = library
        self.cwd, self.home = cwd, home
        self.spec = spec  # a provider name (or alias) to its spec
        self.current = current  # the id of the open session, if any
        self.delete = delete  # deletes through the agent where it can (the engine's delete)

    def search(
        self,
        query: str,
        *,
        provider: str | None = None,
        all_projects: bool = False,
        since: timedelta | None = None,
        limit: int = 50,
    ) -> list[SearchHit]:
        """Sessions whose messages or tool-call titles hold every word of `query` (as words
        or word starts), best match first, then the newest; this project's unless
        `all_projects`. The index (`$AVATAR_HOME/cache/search.sqlite`) is updated first."""
        from avatar.sessions.filestore import same_dir_keys

        with self._index() as index:
            index.update(self.library)
            return index.search(
                query,
                providers=[self.spec(provider).name] if provider else None,
                cwds=None if all_projects else same_dir_keys(self.cwd),
                since=datetime.now(UTC) - since if since is not None else None,
                limit=limit,
            )

    def reindex(self) -> int:
        """Bring the search index up to date; how many sessions were (re)indexed."""
        with self._index() as index:
            return index.update(self.library)

    @contextlib.contextmanager
    def _index(self) -> Iterator[SearchIndex]:
        """The search cache, secrets masked in what it stores; closed after use."""
        from avatar.library.search.index import SearchIndex

        index = SearchIndex(self.home, self.library.registry.secrets().mask)
        try:
            yield index
        finally:
            index.close()

    def rename(self, ref: SessionInfo | str, name: str) -> SessionInfo:
        """Name a session (id, prefix or listed session) where its provider shows names, and
        in avatar's records (see `avatar.library.renaming`)."""
        from avatar.library.renaming import rename

        info = rename(self.library, self.library.info(ref), name)
        with self._index() as index:
            index.named(info)
        return info

    def prunable(
        self,
        older_than: timedelta,
        *,
        provider: str | None = None,
        all_projects: bool = False,
    ) -> list[SessionInfo]:
        """Sessions last updated longer than `older_than` ago (this project's unless
        `all_projects`), oldest last; the open session never is one."""
        cutoff = datetime.now(UTC) - older_than
        name = self.spec(provider).name if provider else None
        found = self.library.sessions(name, None if all_projects else self.cwd)
        current = self.current()
        return [
            s
            for s in found
            if s.id != current and (when := s.updated or s.created) is not None and when <= cutoff
        ]

    async def prune(self, sessions: list[SessionInfo]) -> list[tuple[SessionInfo, str | None]]:
        """Delete each session through `delete()` (the agent's `session/delete` where it
        offers one, else the store); each with None, or why it was not deleted."""
        done: list[tuple[SessionInfo, str | None]] = []
        for info in sessions:
            try:
                await self.delete(info)
                done.append((info, None))
            except AvatarError as e:
                done.append((info, str(e)))
        return done
