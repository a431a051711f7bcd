"""Every provider's sessions, read from their own stores without starting an agent.

The one place that lists sessions, resolves an id (or a unique prefix) to the session and
provider that own it, and reads or deletes one. Each provider's store is built once and
shared with the bridge that serves the provider, so a session is looked up once per run.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.core.errors import NotSupportedError, SessionNotFoundError, UsageError
from avatar.core.ids import check_id
from avatar.core.loading import load_class
from avatar.library.lineage import lineage
from avatar.sessions.filestore import same_dir_keys
from avatar.sessions.store import SessionStore
from avatar.sessions.types import SessionInfo, newest_first

if TYPE_CHECKING:
    from avatar.library.lineage import Links
    from avatar.providers.registry import ProviderRegistry
    from avatar.sessions.records import SessionRecords
    from avatar.sessions.types import SessionInfo, Transcript


class Catalog:
    """The session stores of a provider registry and avatar's records, for any directory:
    what `Library` (`engine.library`, one project's sessions) is built on. A store reads
    the files where the agent, run with the registry's environment, writes them."""

    def __init__(self, registry: ProviderRegistry, avatar_home: Path) -> None:
        self.registry = registry
        self.avatar_home = avatar_home
        self._stores: dict[str, SessionStore | None] = {}
        self._record_file: SessionRecords | None = None

    def store(self, provider: str) -> SessionStore | None:
        """The reader of a provider's sessions: its own store on disk, else (ACP agents)
        avatar's records of the sessions it opened there; None for neither."""
        if provider not in self._stores:
            spec = self.registry.spec(provider)
            cls: type[SessionStore] | None = None
            if spec.store:
                # An abstract base is what the loaded class is checked against (mypy#4717).
                cls = load_class(spec.store, SessionStore)  # type: ignore[type-abstract]
            elif spec.transport == "acp":
                from avatar.sessions.records import RecordStore

                cls = RecordStore
            env = self.registry.env_for(spec)
            self._stores[provider] = cls(provider, env, self.avatar_home) if cls else None
        return self._stores[provider]

    def keeps_records(self, provider: str) -> bool:
        """True when avatar's own records are where `provider`'s sessions are listed."""
        spec = self.registry.spec(provider)
        return spec.store is None and spec.transport == "acp"

    def use_store(self, provider: str, store: SessionStore | None) -> None:
        """Serve `provider`'s sessions from `store` (embedders and tests bring their own)."""
        self._stores[provider] = store

    def opened(self, provider: str, session_id: str, cwd: str, model: str | None) -> None:
        """A session was opened: keep a record of it (for every provider: where the
        provider keeps none we read, it is the listing; where its store is listed under
        another provider, claude-acp reading claude's, the session is still known as this
        provider's; and a session whose files go is still listed where it was)."""
        self.records().opened(provider, session_id, cwd, model)

    def turn_ended(
        self,
        provider: str,
        session_id: str,
        prompt: str | None,
        answer: str,
        tools: list[str],
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Add a turn's messages to avatar's own copy (kept for every provider, docs/design.md §9):
        the prompt as it is sent (answer empty), the answer when the turn ends (prompt
        None), so a turn killed midway still leaves what was asked."""
        self.records().turn(provider, session_id, prompt, answer, tools, extra)

    def link(
        self,
        child: tuple[str, str],
        parent: tuple[str, str],
        how: str = "handoff",
        imported: int | None = None,
    ) -> None:
        """Session `child` (provider, id) was opened from `parent`: record the lineage (and,
        for an import, how many of its first messages it wrote)."""
        self.records().link(child, parent, how, imported)

    def lineage(self) -> dict[str, Links]:
        """Parent and children of every session that has any, by `provider/id`."""

        native = [s.name for s in self.registry.specs() if s.transport == "native"]
        return lineage(self.records(), self.avatar_home, native)

    def copy(self, provider: str, session_id: str) -> Transcript:
        """Avatar's own copy of the turns it carried in a session (SessionNotFoundError when
        it has none)."""

        record = self.records().all().get((provider, session_id), {})
        info = SessionInfo(session_id, provider, cwd=record.get("cwd"), title=record.get("title"))
        return self.records().transcript(info)

    def adopt(self, provider: str, listed: list[SessionInfo]) -> list[SessionInfo]:
        """Sessions an agent listed itself join avatar's records (where the provider keeps
        none avatar reads); those that were new to avatar."""
        if not self.keeps_records(provider):
            return []
        records = self.records()
        adopted = [replace(info, provider=provider) for info in listed]
        return [info for info in adopted if records.listed(info)]

    def records(self) -> SessionRecords:
        """avatar's own records of sessions (one instance: its reading cache is shared)."""
        if self._record_file is None:
            from avatar.sessions.records import SessionRecords

            self._record_file = SessionRecords(self.avatar_home)
        return self._record_file

    def listing_providers(self) -> list[str]:
        """The providers whose stores make up a full listing.

        Providers sharing a store (claude and claude-acp read the same files) are listed
        once, under the first.
        """
        seen: set[str] = set()
        out = []
        for spec in self.registry.specs():
            if spec.store and spec.store not in seen:
                seen.add(spec.store)
                out.append(spec.name)
            elif self.keeps_records(spec.name):
                out.append(spec.name)
        return out

    def shares_store(self, a: str, b: str) -> bool:
        """True when providers `a` and `b` read the same sessions."""
        sa, sb = self.registry.spec(a).store, self.registry.spec(b).store
        return a == b or (sa is not None and sa == sb)

    def sessions(self, provider: str | None = None, cwd: Path | None = None) -> list[SessionInfo]:
        """Sessions of one provider (every provider when None) in `cwd` (any when None),
        newest first."""
        names = [provider] if provider else self.listing_providers()
        found: list[SessionInfo] = []
        for name in names:
            store = self.store(name)
            if store is not None:
                found.extend(store.list(cwd))
        found = self._owned(found) if provider is None else found
        found += self._gone(provider, found, cwd)
        return self._named(newest_first(found))

    def _gone(
        self, provider: str | None, listed: list[SessionInfo], cwd: Path | None
    ) -> list[SessionInfo]:
        """Sessions (of `provider`, or any) with files of their own that no store listed
        although avatar keeps a record and a copy of their turns: their files are gone;
        listed from what avatar knows, marked `gone`."""
        records = self.records()
        seen = {s.id for s in listed}
        here = same_dir_keys(cwd) if cwd is not None else None
        known = {spec.name: spec for spec in self.registry.specs()}
        names = {p for (p, _) in records.all()} if provider is None else {provider}
        out = []
        for name in sorted(names):
            spec = known.get(name)
            if spec is None or spec.store is None:
                continue  # (an ACP agent without files: avatar's records are its listing)
            for info in records.sessions(name):
                if info.id in seen or (here is not None and info.cwd not in here):
                    continue
                if info.path and Path(info.path).is_file():
                    info.gone = True
                    out.append(info)
        return out

    def names(self, key: str = "name") -> dict[tuple[str, str], str]:
        """Names given with `session rename` that avatar keeps, by (provider, id) (`key`:
        another text its records keep, e.g. `worktree`)."""
        records = self.records().all()
        return {k: r[key] for k, r in records.items() if isinstance(r.get(key), str)}

    def worktree(self, provider: str, session_id: str, path: Path) -> None:
        """Session `session_id` runs in the avatar git worktree at `path`."""
        self.records().worktree(provider, session_id, str(path))

    def _named(self, sessions: list[SessionInfo]) -> list[SessionInfo]:
        # A name in the provider's own files (Claude Code's `/rename`) wins over avatar's.
        names, worktrees = self.names(), self.names("worktree")
        for s in sessions if names or worktrees else ():
            s.name = s.name or names.get((s.provider, s.id))
            s.worktree = worktrees.get((s.provider, s.id))
        return sessions

    def _owned(self, sessions: list[SessionInfo]) -> list[SessionInfo]:
        """Sessions of a shared store, each under the provider that opened it (a session
        opened on claude-acp is claude-acp's, though claude's store lists it)."""
        owner = {sid: p for (p, sid) in self.records().all()}
        if not owner:
            return sessions
        return [
            replace(s, provider=owner[s.id])
            if owner.get(s.id, s.provider) != s.provider
            and self.shares_store(owner[s.id], s.provider)
            else s
            for s in sessions
        ]

    def find(self, ref: str, provider: str | None = None) -> SessionInfo:
        """The one session whose id is `ref` or starts with it, in any cwd.

        Raises `SessionNotFoundError` (none) or `UsageError` (an invalid id, or an ambiguous
        prefix, listing the candidates).
        """
        return self.match(check_id(ref), provider)

    def match(self, ref: str, provider: str | None = None) -> SessionInfo:
        """`find()` for a reference already checked with `avatar.core.ids.check_id`."""
        names = [provider] if provider else self.listing_providers()
        found: dict[tuple[str, str], SessionInfo] = {}
        for name in names:
            store = self.store(name)
            if store is None:
                continue
            for info in store.find(ref):
                found[(info.provider, info.id)] = info
        if provider is None:
            found = {(s.provider, s.id): s for s in self._owned(list(found.values()))}
        exact = [s for s in found.values() if s.id == ref]
        matches = exact or list(found.values()) or self._copied(ref, provider)
        if not matches:
            where = f" for {provider}" if provider else ""
            raise SessionNotFoundError(f"no session{where} matches {ref!r}")
        if len(matches) > 1:
            cands = ", ".join(f"{s.id} ({s.provider})" for s in matches[:8])
            raise UsageError(f"session id {ref!r} is ambiguous: {cands}")
        return self._named(matches[:1])[0]

    def files_gone(self, info: SessionInfo) -> bool:
        """True when `info`'s provider lists its sessions from its own files and those of
        `info` are gone (only avatar's copy of the turns is left)."""
        if self.store(info.provider) is None or self.keeps_records(info.provider):
            return False
        # `match` found it in avatar's copy only (no store listed it): its path is the copy.
        return info.path == str(self.records().turns_path(info.provider, info.id))

    def _copied(self, ref: str, provider: str | None) -> list[SessionInfo]:
        """Sessions no store lists (their files gone) of which avatar has a copy of the turns."""
        records = self.records()
        names = {p for (p, sid) in records.all() if sid.startswith(ref)}
        found = [
            s
            for name in names
            if provider in (None, name)
            for s in records.sessions(name)
            if s.id.startswith(ref) and s.path and Path(s.path).is_file()
        ]
        for s in found:
            s.gone = True
        exact = [s for s in found if s.id == ref]
        return exact or found

    def info(self, session: SessionInfo | str) -> SessionInfo:
        """`session` itself when already listed, else the session its id or prefix names."""
        return self.find(session) if isinstance(session, str) else session

    def transcript(self, info: SessionInfo) -> Transcript:
        """The canonical transcript of a listed session: its provider's store (read from
        where the listing found it, not looked up again), else (its file gone or unreadable)
        avatar's own copy of the turns."""
        store = self.store(info.provider)
        try:
            if store is None:
                raise NotSupportedError(info.provider, "reading session history")
            if info.path and not self.files_gone(info):
                return store.read_transcript(info)
            return store.transcript(info.id)
        except (SessionNotFoundError, NotSupportedError):
            try:
                return self.copy(info.provider, info.id)
            except SessionNotFoundError:
                pass
            raise

    def delete(self, info: SessionInfo) -> None:
        """Delete a session's files where its provider's store can (`NotSupportedError`
        else); avatar's records are the caller's (`forget`)."""
        store = self.store(info.provider)
        if store is None:
            raise NotSupportedError(info.provider, "deleting a session")
        store.delete(info)

    def forget(self, info: SessionInfo, *, keep_copy: bool = False) -> None:
        """Remove avatar's record of a session and (unless `keep_copy`) its copy of the
        turns: a deleted session is no longer listed, shown or searched from them."""
        self.records().forget(info.provider, info.id, keep_copy=keep_copy)

    def warnings(self) -> list[str]:
        """What the stores skipped (unreadable files and lines), one line each."""
        return [w for s in self._stores.values() if s is not None for w in s.warnings]
