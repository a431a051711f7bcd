"""Writing files so that a crash never leaves half of one: atomic replace, one-line appends;
opening only regular files where a FIFO or a device would hang or harm; and a lock file that
lets processes take turns (`held`)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def special_kind(mode: int) -> str | None:
    """What a file of `st_mode` is when it is neither a regular file nor a directory."""
    return next((kind for test, kind in _SPECIAL if test(mode)), None)


class SpecialFileError(OSError):
    """A FIFO, device or socket where a regular file was to be read or written."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(f"{os.fspath(path)} is {kind}, not a regular file")
        self.kind = kind
        self.filename = os.fspath(path)
        self.strerror = f"{kind}, not a regular file"  # (what a command's error line says)

    def __str__(self) -> str:
        # (OSError's own would read "[Errno None] None: 'PATH'" once `filename` is set)
        return f"{self.filename} is {self.kind}, not a regular file"


def _open_file(path: str | os.PathLike[str], flags: int, mode: int = 0o666) -> int:
    """`os.open` that never blocks on a FIFO (`O_NONBLOCK`: a reader's open would wait for a
    writer, forever) and refuses anything but a regular file or a directory, checked on the
    open descriptor so a swap after a stat cannot slip past."""
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    try:
        kind = special_kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise SpecialFileError(path, kind)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def regular_file(path: str | os.PathLike[str]) -> tuple[os.stat_result | None, str | None]:
    """The stat of `path` when it is a regular file; else None and why it cannot be read as
    one, in a few words (a symlink loop, a symlink to nothing, a FIFO, a directory, …) — or
    None and None when it is simply gone (removed since its directory was listed)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        try:
            os.lstat(path)
        except OSError:
            return None, None
        return None, "a symlink to nothing"
    except OSError as e:
        return None, e.strerror or str(e)
    kind = "a directory" if stat.S_ISDIR(st.st_mode) else special_kind(st.st_mode)
    if kind is not None:
        return None, f"{kind}, not a regular file"
    return st, None


@contextlib.contextmanager
def held(path: Path, wait: float | None = None) -> Iterator[None]:
    """Hold an exclusive lock on the file `path` (made, 0600, when missing) for the block.

    Another process holding it is waited for: without end, or `wait` seconds at most
    (`TimeoutError` after). The kernel drops the lock when its holder dies, so a crash never
    leaves it held. A symlink at `path` is refused (ELOOP), never followed: a lock may sit where
    an agent can write (a repository's `.git`), and avatar, outside the walls, would otherwise
    make a file wherever the link points.
    """
    fd = _open_file(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        if wait is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        else:
            deadline = time.monotonic() + wait
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise TimeoutError(f"{path} is held by another process") from None
                    time.sleep(0.05)
        yield
    finally:
        os.close(fd)


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """`path` opened for reading (binary) when it is a regular file; `SpecialFileError` for a
    FIFO, device or socket, which is checked before it is opened (opening some devices acts)."""
    kind = special_kind(os.stat(path).st_mode)
    if kind is not None:
        raise SpecialFileError(path, kind)
    return os.fdopen(_open_file(path, os.O_RDONLY), "rb")


def write_regular(path: str | os.PathLike[str], data: bytes) -> None:
    """Create or overwrite regular file `path` with `data`; `SpecialFileError` (and nothing
    written, nothing waited for) when a FIFO, device or socket is there."""
    try:
        kind = special_kind(os.stat(path).st_mode)
    except FileNotFoundError:
        kind = None
    if kind is not None:  # (a FIFO without a reader would fail the open: say what it is)
        raise SpecialFileError(path, kind)
    fd = _open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` to `fd` (a write may take part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def atomic_write(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Replace `path` with `data` in one step: readers see the old file or the new, never part.

    The data goes to a temporary file beside `path` first (same filesystem, so the rename is
    atomic); the temporary file is removed if anything fails.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def append_line(path: Path, line: bytes, *, mode: int = 0o600) -> None:
    """Append one line with a single `O_APPEND` write, so concurrent writers never interleave.

    `line` must end with a newline. Creates the file (and its directory) when missing. A file
    that ends in a torn line (its writer was killed mid-write) gets the newline it lacks
    first: the torn piece stays a line of its own, skipped by readers, and `line` is whole.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, mode)
    try:
        end = os.fstat(fd).st_size
        if end and os.pread(fd, 1, end - 1) != b"\n":
            line = b"\n" + line
        append_all(fd, line)
    finally:
        os.close(fd)


def append_all(fd: int, data: bytes) -> None:
    """Append `data` to `fd` (opened `O_APPEND`) whole or not at all.

    A full disk can take part of a write; the part is cut off again (ftruncate) before the
    error is raised, so a failed append never leaves a torn line in front of the next one.
    """
    written = 0
    view = memoryview(data)
    try:
        while written < len(data):
            written += os.write(fd, view[written:])
    except OSError:
        if written:
            end = os.fstat(fd).st_size
            os.ftruncate(fd, end - written)
        raise
