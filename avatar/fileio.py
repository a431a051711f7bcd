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

    `line` must end with a newline. Creates the file (and its directory) when missing.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, mode)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
