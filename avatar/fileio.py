"""Writing files so that a crash never leaves half of one: atomic replace, one-line appends."""

from __future__ import annotations

import os
from pathlib import Path


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
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
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
