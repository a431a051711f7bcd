"""Full-text search over every provider's sessions: an SQLite FTS5 cache under
`$AVATAR_HOME/cache/search.sqlite`.

The index is a cache, never the source of truth. Each session is indexed with the stamp of its
file (size and modification time); an update re-reads only the sessions whose stamp changed and
drops the ones that are gone. A warm update does not list the stores at all when nothing
changed: it walks their directories and compares every file's stamp with the one recorded at
the last full update (cheap stores, like the native index, are simply listed). A missing,
corrupt or other-version database is rebuilt from the stores.

Indexed (`avatar.library.search.document`): user and assistant text, tool-call titles and tool
output, plus the session's title and name, twice: by words (`text`, for words and word starts)
and by trigrams (`grams`, for phrases and code tokens as written; it reads its text from
`text`, so it is stored once). Text passes through the secret detector first
(`avatar.policy.secrets`), so no secret reaches the file or a snippet. Every word and literal
of a query must occur (`avatar.library.search.query`); results come best match first (FTS5's
bm25), the newest first among equal matches.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.core.collector import collector_paused
from avatar.library.search.document import read_document
from avatar.library.search.hits import SearchHit, hit
from avatar.library.search.query import parse
from avatar.library.search.stamps import Stamp, session_stamp, snapshot, stamp_rows
from avatar.sessions.types import SessionInfo

if TYPE_CHECKING:
    from avatar.library.catalog import Catalog

#: Bump when what is stored changes: an index of another version is rebuilt (its file is
#: deleted first). 3: every secret shape masked, not only keys and a few token shapes.
#: 4: tool output indexed, and the trigram index of phrases and code tokens.
SCHEMA_VERSION = 4
FILE_NAME = "search.sqlite"
#: Seconds an update runs before it reports its progress (and between two reports).
PROGRESS_AFTER = 1.0
#: What is told of an update's progress: sessions read so far, and of how many.
Progress = Callable[[int, int], None]
# SQLite page cache of a connection, in KiB (see `_open`).
CACHE_KIB = 32 * 1024

_SCHEMA = """
CREATE TABLE IF NOT EXISTS docs (
    rowid INTEGER PRIMARY KEY, key TEXT UNIQUE NOT NULL, provider TEXT NOT NULL,
    id TEXT NOT NULL, light INTEGER NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    cwd TEXT, title TEXT, name TEXT, created TEXT, updated TEXT, recency REAL NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS text USING fts5(
    title, body, tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS grams USING fts5(
    title, body, tokenize = 'trigram', content = 'text', content_rowid = 'rowid');
"""


def _utf8(text: str) -> str:
    """`text` with lone surrogates (a JSON `"\\ud800"` escape in a session file, or a path
    that is not UTF-8) replaced: sqlite cannot store them and would fail the whole update."""
    if text.isascii():
        return text
    return text.encode("utf-8", "replace").decode("utf-8")


def _heading(title: str | None, name: str | None) -> str:
    """What the `title` column of the text index holds: the title and the name."""
    return " ".join(t for t in (title, name) if t)


class SearchIndex:
    """The search cache of one `$AVATAR_HOME`; `redact` masks secrets in indexed text."""

    def __init__(self, avatar_home: Path, redact: Callable[[str], str]) -> None:
        self.path = Path(avatar_home) / "cache" / FILE_NAME
        self.redact = redact
        self._db: sqlite3.Connection | None = None
        self._progress: Progress | None = None

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

    def update(self, catalog: Catalog, progress: Progress | None = None) -> int:
        """Bring the index up to date with every store; how many sessions were (re)indexed.
        An update running longer than `PROGRESS_AFTER` seconds (a first build) calls
        `progress(done, total)` every `PROGRESS_AFTER` seconds, and once done."""
        self._progress = progress
        try:
            return self._update(catalog)
        except sqlite3.DatabaseError as e:
            if isinstance(e, sqlite3.OperationalError) and "locked" in str(e):
                return 0  # another avatar is updating it: search what is there
        # Damaged past its header: it is only a cache, so it is built again.
        self.close()
        self._discard()
        try:
            return self._update(catalog)
        except sqlite3.DatabaseError:  # a read-only file or disk (inside an agent's walls)
            self.close()
            self._db = _in_memory(self.path)
            return self._update(catalog)

    def _update(self, catalog: Catalog) -> int:
        with collector_paused():
            return self._update_now(catalog)

    def _update_now(self, catalog: Catalog) -> int:
        db = self._connect()
        files, light = snapshot(catalog)
        if self._fresh(db, files, light):
            return 0
        sessions = catalog.sessions(None, None)
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
            todo: list[tuple[str, SessionInfo, Stamp]] = []
            for key, info in now.items():
                # The snapshot's stamp where it has one: a file is stat()ed once per update
                # (one changed since is only stamped older, so the next update reads it again).
                stamp = files.get(info.path or "") or session_stamp(info)
                old = known.get(key)
                if old is not None and old[:2] == stamp:
                    self._refresh(db, old[2:], info)
                    continue
                if old is not None:
                    self._drop(db, old[2])
                todo.append((key, info, stamp))
            pace = _Pace(self._progress, len(todo))
            for key, info, stamp in todo:
                self._add(db, key, info, stamp, key in light_keys, catalog)
                count += 1
                pace.step(count)
            pace.done()
            db.execute("DELETE FROM files")
            db.executemany("INSERT INTO files VALUES (?, ?, ?)", stamp_rows(files))
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
            f"{s.provider}/{s.id}": session_stamp(s) for s in light
        }

    def _drop(self, db: sqlite3.Connection, rowid: int) -> None:
        _unindex_grams(db, rowid)
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
            _retitle(db, rowid, _heading(*new))

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
        catalog: Catalog,
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
        body = _utf8(read_document(catalog, info, self.redact))
        heading = _heading(title, name)
        row = (cur.lastrowid, heading, body)
        db.execute("INSERT INTO text (rowid, title, body) VALUES (?, ?, ?)", row)
        db.execute("INSERT INTO grams (rowid, title, body) VALUES (?, ?, ?)", row)

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
            _retitle(db, row[0], _heading(row[1], name))
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
        offset: int = 0,
    ) -> list[SearchHit]:
        """Sessions matching `query`, best match first (then the newest), filtered by
        provider, directory (any spelling in `cwds`) and last update; `limit` of them from
        the `offset`-th on."""
        asked = parse(query)
        words, literals = asked.word_match(), asked.literal_match()
        # The word index ranks when there are words; else the trigram index does.
        ranked = "text" if words is not None else "grams"
        where: list[str] = []
        args: list[str | float] = []
        if words is not None:
            where.append("text MATCH ?")
            args.append(words)
        if literals is not None:
            where.append(
                "grams MATCH ?"
                if ranked == "grams"
                else "text.rowid IN (SELECT rowid FROM grams WHERE grams MATCH ?)"
            )
            args.append(literals)
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
            f" docs.updated, {ranked}.title, {ranked}.body FROM {ranked}"
            f" JOIN docs ON docs.rowid = {ranked}.rowid WHERE "
            + " AND ".join(where)
            + f" ORDER BY {ranked}.rank, docs.recency DESC LIMIT ? OFFSET ?"
        )
        rows = self._connect().execute(sql, [*args, limit, offset]).fetchall()
        return [hit(list(asked.words), asked.literals, row) for row in rows]


class _Pace:
    """Reports an update's progress once it has run `PROGRESS_AFTER` seconds: then every
    `PROGRESS_AFTER` seconds, and at its end."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress, self.total = progress, total
        self.due = time.monotonic() + PROGRESS_AFTER
        self.reported = False

    def step(self, done: int) -> None:
        """`done` sessions of the total are read."""
        if self.progress is not None and done % 32 == 0 and time.monotonic() >= self.due:
            self.progress(done, self.total)
            self.reported = True
            self.due = time.monotonic() + PROGRESS_AFTER

    def done(self) -> None:
        """All are read: said when progress was reported at all."""
        if self.progress is not None and self.reported:
            self.progress(self.total, self.total)


def _unindex_grams(db: sqlite3.Connection, rowid: int) -> None:
    """Take document `rowid` out of the trigram index (before `text` changes): an index
    whose text lives in another table is told what it had indexed."""
    db.execute(
        "INSERT INTO grams (grams, rowid, title, body)"
        " SELECT 'delete', rowid, title, body FROM text WHERE rowid = ?",
        (rowid,),
    )


def _retitle(db: sqlite3.Connection, rowid: int, heading: str) -> None:
    """Document `rowid` under a new heading, in both indexes."""
    _unindex_grams(db, rowid)
    db.execute("UPDATE text SET title = ? WHERE rowid = ?", (heading, rowid))
    db.execute(
        "INSERT INTO grams (rowid, title, body) SELECT rowid, title, body FROM text"
        " WHERE rowid = ?",
        (rowid,),
    )


def _in_memory(copy_of: Path | None = None) -> sqlite3.Connection:
    """An index for this run alone, where none can be written: searches still answer. It
    starts as a copy of `copy_of`, the index on disk that cannot be written (`avatar mcp`
    inside an agent's walls reads it), so that only what changed since is read again."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    if copy_of is not None and copy_of.is_file():
        try:
            source = sqlite3.connect(f"{copy_of.as_uri()}?mode=ro", uri=True)
            try:
                if source.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
                    source.backup(db)
                    return db
            finally:
                source.close()
        except sqlite3.Error:
            pass  # (unreadable too: built from the stores)
    db.executescript(_SCHEMA)
    return db
