"""`engine.library` (docs/design.md §8): every provider's sessions as one library, for one project.

List, find, read, export, search, rename, prune, delete and pack sessions; each method is a
thin call into the module doing the work (`catalog` for the stores, `avatar.library.search`,
`renaming`, `export`, `archive`). The engine offers the same names as thin delegates.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, Unpack

from avatar.core.errors import AvatarError, UsageError
from avatar.library import worktree_place
from avatar.library.archive import Archives
from avatar.library.renaming import rename
from avatar.sessions.types import newest_first

if TYPE_CHECKING:
    from avatar.library.catalog import Catalog
    from avatar.library.lineage import Links
    from avatar.library.search.hits import SearchHit
    from avatar.library.search.index import Progress, SearchIndex
    from avatar.sessions.spending import TurnCost
    from avatar.sessions.types import SessionInfo, Transcript


@dataclass(frozen=True)
class DeleteHow:
    """How to delete a session (`session delete`): `forget` removes avatar's record only,
    never asking the agent; `keep_copy` keeps avatar's copy of the turns on disk."""

    forget: bool = False
    keep_copy: bool = False


class SearchHow(TypedDict, total=False):
    """Where and how `search` looks (every key optional): `provider` (one provider's
    sessions), `all_projects` (every directory's, not only this project's), `since` (updated
    within that long), `limit` (default 50) matches from the `offset`-th on, and `progress`
    (told how far a first build of the index is)."""

    provider: str | None
    all_projects: bool
    since: timedelta | None
    limit: int
    offset: int
    progress: Progress | None


@dataclass(frozen=True)
class Deleted:
    """What `session delete` did to session `info`: `done` is `deleted` or `forgot` (avatar's
    record only); `note` says what else went and where the session still lives."""

    info: SessionInfo
    done: str
    note: str | None = None

    def line(self) -> str:
        """The line `session delete` prints."""
        said = f"{self.done} {self.info.provider} session {self.info.id}"
        return f"{said}: {self.note}" if self.note else said


class Library:
    """Every provider's sessions, for one project (`cwd`): see the module docstring."""

    def __init__(
        self,
        catalog: Catalog,
        cwd: Path,
        home: Path,
        current: Callable[[], str | None],
        delete: Callable[[SessionInfo, DeleteHow], Awaitable[Deleted]],
    ) -> None:
        self.catalog = catalog  #: the stores themselves, and avatar's records
        self.cwd, self.home = cwd, home
        self._current = current  # the id of the open session, if any
        self._delete = delete  # through the agent where it can (the engine's delete)
        self.archives = Archives(catalog)  #: sessions packed to move between machines

    def _name(self, provider: str | None) -> str | None:
        return self.catalog.registry.spec(provider).name if provider else None

    # -- reading ---------------------------------------------------------------------------

    def sessions(self, provider: str | None = None, *, any_cwd: bool = False) -> list[SessionInfo]:
        """Sessions of one provider (every provider when None) in this project (or any
        directory), newest first; at the top of a git repository, those of its avatar
        worktrees too (`avatar.library.worktrees`). No agent is started."""
        return self._sessions(self._name(provider), any_cwd)

    def _project(self) -> list[Path]:
        """The directories of this project: the cwd, and at the top of a git repository its
        avatar worktrees (`avatar.library.worktrees`)."""
        return [self.cwd, *worktree_place.of_repository(self.cwd)]

    def _sessions(self, provider: str | None, any_cwd: bool) -> list[SessionInfo]:
        dirs = [None] if any_cwd else self._project()
        if len(dirs) == 1:  # (already newest first)
            return self.catalog.sessions(provider, dirs[0])
        return newest_first(s for d in dirs for s in self.catalog.sessions(provider, d))

    def remove_worktree(self, info: SessionInfo, discard: bool = False) -> str:
        """Remove the git worktree session `info` ran in (`avatar.library.worktrees.remove`);
        a line saying what was done. Refused while it holds work not committed, unless
        `discard` (which throws that away)."""
        from avatar.library import worktrees

        return worktrees.remove(self._worktree(info), discard)

    def check_worktree(self, info: SessionInfo, discard: bool = False) -> list[str]:
        """What removing the worktree of session `info` would throw away (`worktrees.unsaved`);
        a UsageError saying what and how when that is anything and not to `discard`."""
        from avatar.library import worktrees

        path = self._worktree(info)
        lost = worktrees.unsaved(path)
        if lost and not discard:
            raise UsageError(worktrees.refusal(path, lost))
        return lost

    @staticmethod
    def _worktree(info: SessionInfo) -> Path:
        if not info.worktree:
            raise UsageError(f"{info.provider} session {info.id} has no worktree")
        return Path(info.worktree)

    def find(self, ref: str, provider: str | None = None) -> SessionInfo:
        """The session whose id is `ref` or starts with it (any provider, any directory)."""
        return self.catalog.find(ref, self._name(provider))

    def transcript(self, session: SessionInfo | str) -> Transcript:
        """The canonical transcript of a session (a listed one, or an id or prefix)."""
        return self.catalog.transcript(self.catalog.info(session))

    def turn_costs(
        self, *, since: datetime | None = None, session: tuple[str, str] | None = None
    ) -> list[TurnCost]:
        """Each turn's tokens and cost as avatar's records keep them, of `session` (provider,
        id) or of every session with a turn `since` then (`avatar.sessions.spending`)."""
        from avatar.sessions.spending import turn_costs

        return turn_costs(self.catalog.records().root, since=since, session=session)

    def lineage(self) -> dict[str, Links]:
        """Each session's parent and children, by session id (`avatar.library.lineage`)."""
        return self.catalog.lineage()

    def warnings(self) -> list[str]:
        """What the stores skipped while reading (unreadable files and lines)."""
        return self.catalog.warnings()

    def export(self, session: SessionInfo | str, fmt: str = "md", to: Path | None = None) -> str:
        """A transcript as `md`, `html` or `json`, secrets masked; with `to`, written there too."""
        from avatar.library.export.render import render, write_export

        secrets = self.catalog.registry.secrets()
        return write_export(to, render(self.transcript(session), fmt, secrets))

    def handoff(self, session: SessionInfo | str, budget_tokens: int) -> str:
        """The structured handoff of a session (`avatar.handoff.build_handoff`: its goal,
        decisions, files, failures and plan, then its newest turns), fitted to `budget_tokens`
        estimated tokens, secrets masked: what another agent reads to take over or look up
        the work. Its fixed part is cut too where it alone is over the budget."""
        from avatar.handoff import build_handoff
        from avatar.handoff.window import estimate_tokens

        secrets = self.catalog.registry.secrets()
        text = build_handoff(self.transcript(session), budget_tokens, secrets=secrets)
        if estimate_tokens(text) <= budget_tokens:
            return text
        cut = f"\n[… cut to fit {budget_tokens:,} tokens …]\n"
        keep = max(0, budget_tokens * 4 - len(cut) - 4)
        return text[: keep // 2] + cut + text[len(text) - keep // 2 :]

    # -- changing --------------------------------------------------------------------------

    async def delete(
        self, session: SessionInfo | str, *, forget: bool = False, keep_copy: bool = False
    ) -> Deleted:
        """Delete a session through its agent, else its store, and avatar's record and copy
        of it (`avatar.engine.deleting`; `DeleteHow` for the flags); an agent that cannot
        delete is a `ProviderError`, nothing deleted. Returns what was done."""
        return await self._delete(self.catalog.info(session), DeleteHow(forget, keep_copy))

    def search(self, query: str, **how: Unpack[SearchHow]) -> list[SearchHit]:
        """Sessions whose messages, tool calls or tool output hold every word of `query` (as
        words or word starts) and every phrase in quotes and code token (`foo_bar()`) as
        written, best match first, then the newest; `limit` of them from the `offset`-th on;
        this project's (its worktrees' too) unless `all_projects`. The index
        (`$AVATAR_HOME/cache/search.sqlite`) is updated first; an update taking over a second
        (a first build) tells `progress` how far it is (`SearchIndex.update`); `SearchHow`
        for the keys."""
        from avatar.sessions.filestore import same_dir_keys

        provider, since = how.get("provider"), how.get("since")
        cwds = (
            None
            if how.get("all_projects")
            else [k for d in self._project() for k in same_dir_keys(d)]
        )
        with self._index() as index:
            index.update(self.catalog, how.get("progress"))
            return index.search(
                query,
                providers=[self.catalog.registry.spec(provider).name] if provider else None,
                cwds=cwds,
                since=datetime.now(UTC) - since if since is not None else None,
                limit=how.get("limit", 50),
                offset=how.get("offset", 0),
            )

    def reindex(self) -> int:
        """Bring the search index up to date; how many sessions were (re)indexed."""
        with self._index() as index:
            return index.update(self.catalog)

    @contextlib.contextmanager
    def _index(self) -> Iterator[SearchIndex]:
        """The search cache, secrets masked in what it stores; closed after use."""
        from avatar.library.search.index import SearchIndex

        index = SearchIndex(self.home, self.catalog.registry.secrets().mask)
        try:
            yield index
        finally:
            index.close()

    def rename(self, ref: SessionInfo | str, name: str) -> SessionInfo:
        """Name a session (id, prefix or listed session) where its provider shows names, and
        in avatar's records (see `avatar.library.renaming`)."""

        info = rename(self.catalog, self.catalog.info(ref), name)
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
        """Sessions last updated longer than `older_than` ago (this project's, its worktrees'
        too, unless `all_projects`), oldest last; the open session never is one."""
        cutoff = datetime.now(UTC) - older_than
        found = self._sessions(self._name(provider), all_projects)
        current = self._current()
        return [
            s
            for s in found
            if s.id != current and (when := s.updated or s.created) is not None and when <= cutoff
        ]

    async def prune(self, sessions: list[SessionInfo]) -> list[tuple[SessionInfo, Deleted | str]]:
        """Delete each session as `delete` does; each with what was done, or why it was not
        deleted (one failure never stops the others)."""
        done: list[tuple[SessionInfo, Deleted | str]] = []
        for info in sessions:
            try:
                done.append((info, await self._delete(info, DeleteHow())))
            except AvatarError as e:
                done.append((info, str(e)))
        return done
