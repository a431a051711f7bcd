"""What codex keeps of a thread beside its rollout, in `$CODEX_HOME` (measured on codex 0.166):

- `state_<n>.sqlite`: the `threads` table (one row per thread: rollout path, title, `name`,
  archived flag), and tables keyed by `thread_id` (read receipts, tools, attachments, …);
- `thread_history_<n>.sqlite`, `goals_<n>.sqlite`, `memories_<n>.sqlite`,
  `queue_<n>.sqlite`, `logs_<n>.sqlite`: more rows keyed by `thread_id` (the thread's items
  and turns, its goal, its memory, its queued prompts, its log lines);
- `session_index.jsonl`: the names `/rename` gave, one `{"id", "thread_name"}` line each;
- `shell_snapshots/<id>.<n>.sh`: the shell environment the thread's commands ran in.

codex's own `thread/delete` removes the rollout, the thread's rows in these databases and its
projection; `forget_thread` does the same from outside codex (the stdlib `sqlite3`, only rows
naming that one thread), and removes its name lines and shell snapshots too.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.core.errors import ProviderError
from avatar.core.fileio import atomic_write
from avatar.sessions.filestore import listdir

if TYPE_CHECKING:
    import sqlite3

#: codex's databases: `<name>_<schema version>.sqlite`.
_DATABASE = re.compile(r"([a-z_]+)_(\d+)\.sqlite")
#: The columns that name a thread in codex's tables (`threads.id` is the thread itself).
_THREAD_COLUMNS = ("thread_id", "parent_thread_id", "child_thread_id")
#: How long a write waits for a codex that holds a database's lock.
_BUSY_SECONDS = 5.0


def databases(home: Path) -> Iterator[tuple[str, int, str]]:
    """`(name, version, path)` of each of codex's sqlite databases in `home`."""
    for entry in listdir(home):
        if (m := _DATABASE.fullmatch(entry.name)) and entry.is_file(follow_symlinks=False):
            yield m.group(1), int(m.group(2)), entry.path


def _connect(path: str) -> sqlite3.Connection:
    import sqlite3

    # mode=rw: a database codex never made is never made here.
    uri = Path(path).absolute().as_uri() + "?mode=rw"
    return sqlite3.connect(uri, uri=True, timeout=_BUSY_SECONDS)


def name_thread(home: Path, session_id: str, name: str) -> bool:
    """Set the `name` of thread `session_id` in codex's newest state database, as codex-acp's
    `session/set_title` does; False when there is no such database, table, column or row (a
    codex that keeps none: the index line is what it reads)."""
    import sqlite3

    found = [(v, p) for n, v, p in databases(home) if n == "state"]
    if not found:
        return False
    try:
        with contextlib.closing(_connect(max(found)[1])) as db, db:
            cursor = db.execute("UPDATE threads SET name = ? WHERE id = ?", (name, session_id))
            return cursor.rowcount > 0
    except sqlite3.Error:
        return False


def forget_thread(home: Path, session_id: str) -> list[str]:
    """Remove every row naming thread `session_id` from codex's databases in `home`, then
    its lines in `session_index.jsonl` and its shell snapshots; what was removed, one short
    phrase each. Every database is locked for writing before any row goes, so a database
    codex holds locked past a few seconds (a codex running on it) is a `ProviderError` with
    nothing removed."""
    import sqlite3

    held: list[tuple[str, sqlite3.Connection]] = []
    try:
        for name, _, path in sorted(databases(home)):
            db = _connect(path)
            held.append((name, db))
            try:
                db.execute("BEGIN IMMEDIATE")  # (the write lock, or a wait for it)
            except sqlite3.OperationalError as e:
                raise ProviderError(
                    f"codex's database {path} is busy or unreadable ({e}): is codex running? "
                    f"Nothing of session {session_id} was deleted"
                ) from None
        counts = [(name, _delete_rows(db, session_id)) for name, db in held]
        for _, db in held:
            db.commit()
    except sqlite3.DatabaseError as e:
        raise ProviderError(f"codex's databases refused the deletion: {e}") from None
    finally:
        for _, db in held:
            db.close()  # (uncommitted: rolled back)
    removed = [f"{n} row{'s' if n != 1 else ''} in {name}" for name, n in counts if n]
    if _drop_index_lines(home / "session_index.jsonl", session_id):
        removed.append("its name")
    snapshots = [
        e.path for e in listdir(home / "shell_snapshots") if e.name.startswith(f"{session_id}.")
    ]
    for snapshot in snapshots:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(snapshot)
    if snapshots:
        removed.append("its shell snapshots")
    return removed


def _delete_rows(db: sqlite3.Connection, session_id: str) -> int:
    """Delete the rows naming `session_id` in every table of `db` (in its open transaction);
    how many went (codex's own foreign keys are not on here: every table naming a thread is
    cleared by its column)."""
    count = 0
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        quoted = '"' + table.replace('"', '""') + '"'
        columns = {r[1] for r in db.execute(f"PRAGMA table_info({quoted})")}
        keys = [c for c in _THREAD_COLUMNS if c in columns]
        if table == "threads" and "id" in columns:
            keys.append("id")
        for key in keys:
            count += db.execute(f'DELETE FROM {quoted} WHERE "{key}" = ?', (session_id,)).rowcount
    return count


def _drop_index_lines(index: Path, session_id: str) -> bool:
    """Rewrite codex's name index without the lines of `session_id`; True if there were any."""
    try:
        data = index.read_bytes()
    except OSError:
        return False
    kept, dropped = [], False
    for line in data.splitlines(keepends=True):
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict) and record.get("id") == session_id:
            dropped = True
        else:
            kept.append(line)
    if dropped:
        atomic_write(index, b"".join(kept))
    return dropped
