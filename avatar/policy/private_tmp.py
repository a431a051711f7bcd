"""The private temp dir of a sandbox (its processes' `TMPDIR`, and the blank stand-ins the walls
cover paths with), and the removal of those whose avatar was killed before it could remove
them: each carries a lock its avatar holds for as long as it lives; one whose lock is free
belongs to nobody."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

#: The private temp dirs' names begin so.
_TMP_PREFIX = "avatar-"


def temp_root() -> Path:
    """Where the private temp dirs are made: `$TMPDIR` when it names a directory, else /tmp
    (`tempfile`'s choice on Linux, without its import: with `shutil` and `random`, ~2 ms of
    every agent's start)."""
    named = os.environ.get("TMPDIR", "")
    return Path(named) if os.path.isabs(named) and os.path.isdir(named) else Path("/tmp")


def _new_dir(base: Path, prefix: str) -> Path:
    """A new directory in `base`, 0700, of a random name beginning with `prefix` (made by
    `mkdir`, which fails on any name already there: nobody else's is ever taken)."""
    while True:
        made = base / f"{prefix}{os.urandom(6).hex()}"
        try:
            made.mkdir(mode=0o700)
        except FileExistsError:
            continue
        return made


def _hold(tmp: Path) -> int:
    """Lock `tmp` as this process's: the lock is taken before its file appears (renamed into
    place), so another avatar never finds it free while its owner lives."""
    fresh = tmp / ".lock.new"
    fd = os.open(fresh, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.rename(fresh, tmp / ".lock")
    return fd


def load_removal() -> None:
    """Load what `remove` takes (`shutil`, with its archive modules: ~1.5 ms) ahead of it:
    called once a walled process has started, so that avatar's end, which waits for that
    process to exit, does not wait for an import as well."""
    import shutil  # noqa: F401  (not at the top: every agent's start loads this module)


def remove(tmp: Path) -> None:
    """Remove a private temp dir (its stand-ins are mode 0: opened up first)."""
    import shutil  # (loaded already where `load_removal` ran)

    for stand_in in (tmp / ".blank.d", tmp / ".blank", tmp / ".empty.d"):
        with contextlib.suppress(OSError):
            os.chmod(stand_in, 0o700)
    shutil.rmtree(tmp, ignore_errors=True)


def remove_stale(where: Path | None = None) -> list[Path]:
    """Remove the private temp dirs of avatars that are gone (killed before they could): those
    of this user whose lock nobody holds. Returns what was removed."""
    base = where or temp_root()
    removed = []
    uid = os.getuid()
    try:
        entries = [e for e in os.scandir(base) if e.name.startswith(_TMP_PREFIX)]
    except OSError:
        return []
    for entry in entries:
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat().st_uid != uid:
                continue
            fd = os.open(Path(entry.path, ".lock"), os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            continue  # not a sandbox's, or one still being made
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # its avatar lives
        remove(Path(entry.path))
        os.close(fd)
        removed.append(Path(entry.path))
    return removed


def make(kind: str) -> tuple[Path, int]:
    """A new private temp dir for processes of `kind` (after removing the stale ones), with its
    blank and empty stand-ins and its `tmp/`; and the descriptor holding its lock (close it when
    done)."""
    remove_stale()
    tmp = _new_dir(temp_root(), f"{_TMP_PREFIX}{kind}-")
    lock = _hold(tmp)
    (tmp / ".blank").touch(mode=0)
    (tmp / ".blank.d").mkdir(mode=0)
    (tmp / ".empty").touch(mode=0o444)
    (tmp / ".empty.d").mkdir(mode=0o555)
    (tmp / "tmp").mkdir(mode=0o700)
    return tmp, lock
