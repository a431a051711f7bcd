"""Full-text search over every provider's sessions: an SQLite FTS5 cache under
`$AVATAR_HOME/cache/search.sqlite`.

The index is a cache, never the source of truth. Each session is indexed with the stamp of its
file (size and modification time); an update re-reads only the sessions whose stamp changed and
drops the ones that are gone. A warm update does not list the stores at all when nothing
changed: it walks their directories and compares every file's stamp with the one recorded at
the last full update (cheap stores, like the native index, are simply listed). A missing,
corrupt or other-version database is rebuilt from the stores.

Indexed: user and assistant text and tool-call titles (the tool and its short arguments), not
tool output, plus the session's title and name. Text passes through the secret detector first
(`avatar.policy.secrets`), so no secret reaches the file or a snippet. Every word of a query
must occur (a word's start counts); results come best match first (FTS5's bm25), the newest
first among equal matches.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.core.errors import AvatarError, SessionNotFoundError, UsageError
from avatar.library.search.hits import SearchHit, hit, query_words
from avatar.sessions.types import SessionInfo, Transcript

if TYPE_CHECKING:
    from avatar.library.catalog import SessionLibrary

#: Bump when what is stored changes: an index of another version is rebuilt (its file is
#: deleted first). 3: every secret shape masked, not only keys and a few token shapes.
SCHEMA_VERSION = 3
FILE_NAME = "search.sqlite"
# SQLite page cache of a connection, in KiB (see `_open`).
CACHE_KIB = 32 * 1024
# Tool-call arguments that say what a call does (its title, as agents show it).
_TITLE_ARGS = ("description", "command", "file_path", "path", "pattern", "query", "url", "title")
_TITLE_ARG_CHARS = 200

Stamp = tuple[int, int]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS docs (
    rowid INTEGER PRIMARY KEY, key TEXT UNIQUE NOT NULL, provider TEXT NOT NULL,
    id TEXT NOT NULL, light INTEGER NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    cwd TEXT, title TEXT, name TEXT, created TEXT, updated TEXT, recency REAL NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS text USING fts5(
    title, body, tokenize = 'unicode61 remove_diacritics 2');
"""


def match_query(text: str) -> str:
    """An FTS5 query for what the user typed: every word must occur (as a word or the start
    of one). Punctuation is ignored, so no input is an FTS syntax error."""
    words = query_words(text)  # the words the hits are marked by, as the index folds them
    if not words:
        raise UsageError(f"nothing to search for in {text!r}")
    return " ".join(f'"{w}"*' for w in words)


def document(transcript: Transcript, redact: Callable[[str], str] = str) -> str:
    """The searchable text of a session: user and assistant messages and tool-call titles,
    each passed through `redact` (before a title is cut, so no secret is cut in two)."""
    parts: list[str] = []
    for m in transcript.messages:
        if m.role not in ("user", "assistant"):
            continue  # tool output is large and rarely what people look for
        if m.text.strip():
            parts.append(redact(m.text.strip()))
        for call in m.tool_calls:
            args = call.input if isinstance(call.input, dict) else {}
            said = [redact(str(args[k]))[:_TITLE_ARG_CHARS] for k in _TITLE_ARGS if args.get(k)]
            parts.append(" ".join([call.name, *said]))
    return "\n".join(parts)


def _utf8(text: str) -> str:
    """`text` with lone surrogates (a JSON `"\\ud800"` escape in a session file, or a path
    that is not UTF-8) replaced: sqlite cannot store them and would fail the whole update."""
    if text.isascii():
        return text
    return text.encode("utf-8", "replace").decode("utf-8")


def _stamp(path: str | None) -> Stamp | None:
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def _session_stamp(info: SessionInfo) -> Stamp:
    # A session without a file (or whose file vanished) is known by its count and time.
    found = _stamp(info.path)
    if found is not None:
        return found
    when = info.updated or info.created
    return (info.messages, int(when.timestamp() * 1e9) if when else 0)


def _heading(title: str | None, name: str | None) -> str:
    """What the `title` column of the text index holds: the title and the name."""
    return " ".join(t for t in (title, name) if t)


class SearchIndex:
    """The search cache of one `$AVATAR_HOME`; `redact` masks secrets in indexed text."""

    def __init__(self, avatar_home: Path, redact: Callable[[str], str]) -> None:
        self.path = Path(avatar_home) / "cache" / FILE_NAME
        self.redact = redact
        self._db: sqlite3.Connection | None = None

    # -- the database -------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            try:
                try:
                    self._db = self._open()
                except sqlite3.DatabaseError:
                    self._discard()  # corrupt, or not a database at all: it is only a cache
                    self._db = self._open()
            except OSError:
                self._db = _in_memory()
        return self._db

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():  # private to the user, like the rest of $AVATAR_HOME
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
        db = sqlite3.connect(self.path, timeout=10, isolation_level=None)
        # A first build inserts tens of thousands of rows in one transaction: with SQLite's
        # 2 MB default the key index spills and is re-read, so the build grows faster than
        # the stores (~10 % at 40,000 sessions). The cache fills only as far as it is needed.
        db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version != SCHEMA_VERSION:
                if version != 0 or db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    db.close()
                    self._discard()
                    return self._open()
                db.executescript(
                    f"BEGIN IMMEDIATE;{_SCHEMA}PRAGMA user_version = {SCHEMA_VERSION};COMMIT;"
                )
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def _discard(self) -> None:
        for suffix in ("", "-journal", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.unlink(f"{self.path}{suffix}")

    def close(self) -> None:
        """Close the database (it reopens when used again)."""
        if self._db is not None:
            self._db.close()
            self._db = None

    # -- keeping it up to date ----------------------------------------------------------

    def update(self, library: SessionLibrary) -> int:
        """Bring the index up to date with every store; how many sessions were (re)indexed."""
        try:
            return self._update(library)
        except sqlite3.DatabaseError as e:
            if isinstance(e, sqlite3.OperationalError) and "locked" in str(e):
                return 0  # another avatar is updating it: search what is there
        # Damaged past its header: it is only a cache, so it is built again.
        self.close()
        self._discard()
        try:
            return self._update(library)
        except sqlite3.DatabaseError:  # a read-only file or disk
            self.close()
            self._db = _in_memory()
            return self._update(library)

    def _update(self, library: SessionLibrary) -> int:
        with collector_paused():
            return self._update_now(library)

    def _update_now(self, library: SessionLibrary) -> int:
        db = self._connect()
        files, light = _snapshot(library)
        if self._fresh(db, files, light):
            return 0
        sessions = library.sessions(None, None)
        now = {f"{s.provider}/{s.id}": s for s in sessions}
        light_keys = {f"{s.provider}/{s.id}" for s in light}
        count = 0
        # Under the write lock from here: what another process indexed meanwhile is seen.
        db.execute("BEGIN IMMEDIATE")
        try:
            known = {
                row[0]: row[1:]
                for row in db.execute("SELECT key, size, mtime_ns, rowid, title, name FROM docs")
            }
            for key in known.keys() - now.keys():
                self._drop(db, known[key][2])
            for key, info in now.items():
                # The snapshot's stamp where it has one: a file is stat()ed once per update
                # (one changed since is only stamped older, so the next update reads it again).
                stamp = files.get(info.path or "") or _session_stamp(info)
                old = known.get(key)
                if old is not None and old[:2] == stamp:
                    self._refresh(db, old[2:], info)
                    continue
                if old is not None:
                    self._drop(db, old[2])
                self._add(db, key, info, stamp, key in light_keys, library)
                count += 1
            db.execute("DELETE FROM files")
            db.executemany("INSERT INTO files VALUES (?, ?, ?)", _rows(files))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return count

    def _fresh(
        self, db: sqlite3.Connection, files: dict[str, Stamp], light: list[SessionInfo]
    ) -> bool:
        old = {p: (s, m) for p, s, m in db.execute("SELECT path, size, mtime_ns FROM files")}
        if old != files:
            return False
        rows = db.execute("SELECT key, size, mtime_ns FROM docs WHERE light = 1").fetchall()
        return {k: (s, m) for k, s, m in rows} == {
            f"{s.provider}/{s.id}": _session_stamp(s) for s in light
        }

    def _drop(self, db: sqlite3.Connection, rowid: int) -> None:
        db.execute("DELETE FROM text WHERE rowid = ?", (rowid,))
        db.execute("DELETE FROM docs WHERE rowid = ?", (rowid,))

    def _refresh(
        self, db: sqlite3.Connection, old: tuple[int, str, str], info: SessionInfo
    ) -> None:
        # The file is unchanged, but what lies beside it (a codex thread name, a name in
        # avatar's records) may not be.
        rowid, title, name = old
        if (title, name) != (new := self._names(info)):
            db.execute("UPDATE docs SET title = ?, name = ? WHERE rowid = ?", (*new, rowid))
            db.execute("UPDATE text SET title = ? WHERE rowid = ?", (_heading(*new), rowid))

    def _names(self, info: SessionInfo) -> tuple[str | None, str | None]:
        return (
            self.redact(_utf8(info.title)) if info.title else None,
            self.redact(_utf8(info.name)) if info.name else None,
        )

    def _add(
        self,
        db: sqlite3.Connection,
        key: str,
        info: SessionInfo,
        stamp: Stamp,
        light: bool,
        library: SessionLibrary,
    ) -> None:
        title, name = self._names(info)
        when = info.updated or info.created
        cur = db.execute(
            "INSERT INTO docs (key, provider, id, light, size, mtime_ns, cwd, title, name,"
            " created, updated, recency) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                info.provider,
                info.id,
                int(light),
                *stamp,
                _utf8(os.path.normpath(info.cwd)) if info.cwd else None,
                title,
                name,
                info.created.isoformat() if info.created else None,
                info.updated.isoformat() if info.updated else None,
                when.timestamp() if when else 0.0,
            ),
        )
        body = _utf8(_read(library, info, self.redact))
        heading = _heading(title, name)
        db.execute(
            "INSERT INTO text (rowid, title, body) VALUES (?, ?, ?)", (cur.lastrowid, heading, body)
        )

    def named(self, info: SessionInfo) -> None:
        """Session `info` was given a name: searches show it (and find it by it) at once,
        though its file may not have changed."""
        if not self.path.exists():
            return  # the first search indexes it with its name
        db = self._connect()
        _, name = self._names(info)
        key = f"{info.provider}/{info.id}"
        row = db.execute("SELECT rowid, title FROM docs WHERE key = ?", (key,)).fetchone()
        if row is not None:
            db.execute("BEGIN IMMEDIATE")
            db.execute("UPDATE docs SET name = ? WHERE rowid = ?", (name, row[0]))
            db.execute(
                "UPDATE text SET title = ? WHERE rowid = ?", (_heading(row[1], name), row[0])
            )
            db.execute("COMMIT")

    # -- asking -------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        providers: Iterable[str] | None = None,
        cwds: Iterable[str] | None = None,
        since: datetime | None = None,
        limit: int = 50,
    ) -> list[SearchHit]:
        """Sessions matching `query`, best match first (then the newest), filtered by
        provider, directory (any spelling in `cwds`) and last update."""
        where: list[str] = ["text MATCH ?"]
        args: list[str | float] = [match_query(query)]
        for column, values in (("provider", providers), ("cwd", cwds)):
            if values is not None:
                chosen = [os.path.normpath(v) if column == "cwd" else v for v in values]
                where.append(f"docs.{column} IN ({', '.join('?' * len(chosen)) or 'NULL'})")
                args.extend(chosen)
        if since is not None:
            where.append("docs.recency >= ?")
            args.append(since.astimezone(UTC).timestamp())
        sql = (
            "SELECT docs.provider, docs.id, docs.cwd, docs.title, docs.name, docs.created,"
            " docs.updated, text.title, text.body FROM text"
            " JOIN docs ON docs.rowid = text.rowid WHERE "
            + " AND ".join(where)
            + " ORDER BY text.rank, docs.recency DESC LIMIT ?"
        )
        rows = self._connect().execute(sql, [*args, limit]).fetchall()
        words = query_words(query)
        return [hit(words, row) for row in rows]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while an update reads thousands of sessions: their
    objects are short-lived and acyclic, and the collector walking the growing heap again and
    again cost ~10% of a 40,000-session build (15.6 → 14.0 s). The CLI pauses it for every
    command anyway; this is for the Python API."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _in_memory() -> sqlite3.Connection:
    """An index for this run alone, where none can be written: searches still answer."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.executescript(_SCHEMA)
    return db


def _read(library: SessionLibrary, info: SessionInfo, redact: Callable[[str], str]) -> str:
    store = library.store(info.provider)
    try:
        # Straight from the listed file: `transcript(id)` would look the id up in the store
        # again, once per session.
        if store is not None and info.path:
            with contextlib.suppress(SessionNotFoundError):  # then avatar's copy, if any
                return document(store.read_transcript(info), redact)
        return document(library.transcript(info), redact)
    except (AvatarError, OSError, ValueError):
        return ""  # unreadable now: still found by its title, read again when it changes


def _snapshot(library: SessionLibrary) -> tuple[dict[str, Stamp], list[SessionInfo]]:
    """The stamp of every file of the stores that name their session files (found without
    reading any: native sessions too, whose index is cheap to read but needs pydantic), and
    the sessions of the other stores (whose listing is cheap)."""
    files: dict[str, Stamp] = {}
    light: list[SessionInfo] = []
    for name in library.listing_providers():
        store = library.store(name)
        if store is None:
            continue
        paths = store.session_files(None)
        if paths is None:
            light.extend(store.list(None))
            continue
        for path in paths:
            stamp = _stamp(path)
            if stamp is not None:
                files[path] = stamp
    return files, light


def _rows(files: dict[str, Stamp]) -> Iterator[tuple[str, int, int]]:
    for path, (size, mtime) in files.items():
        yield path, size, mtime
