"""avatar's own file I/O on an agent's behalf — ACP's `fs/read_text_file` and
`fs/write_text_file`, the native `read`, `write`, `edit` and `grep` — checked on what is
actually opened (docs/design.md §10).

avatar runs outside the walls, so checking a path and then opening it by name would let a
walled agent swap a checked directory for a symlink in between and have avatar read a denied
file or write outside the project. Here:

1. the scope checks the path as given (`ScopePolicy.check`: the polite refusal, and the real
   path it names, symlinks resolved);
2. that real path is opened beneath the root it lies in, in one step and following no symlink
   (`avatar.core.beneath`: a symlink that appeared since is ELOOP, a step out EXDEV); missing
   parent directories of a write are made one by one, each beneath the one before;
3. the opened file must be where the check said (`/proc/self/fd`), a regular file, and for a
   write have no other hard link; only then is it read, or truncated and written (in place,
   through the descriptor).

A path that changed while it was opened is refused as the scope refuses (`ScopeDenied`).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from functools import partial
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from avatar.core.beneath import fd_path, make_dirs_beneath, open_file_beneath
from avatar.core.fileio import SpecialFileError, special_kind, write_all
from avatar.policy.denied import ScopeDenied
from avatar.policy.scope import Mode, ScopePolicy

_RACED = (errno.ELOOP, errno.EXDEV)


def open_read(policy: ScopePolicy, path: str) -> BinaryIO:
    """The file `path` names, open for reading (binary), when the scope lets it be read.
    `ScopeDenied`, FileNotFoundError, IsADirectoryError or `SpecialFileError` otherwise."""
    return open_judged(policy, policy.check(path, "read"), path)


def open_judged(policy: ScopePolicy, real: Path, path: str | None = None) -> BinaryIO:
    """File `real` — a real path (no symlink in it) the scope has let be read, as a walk of
    the project judged it — open for reading, when it is still that file: opened beneath its
    root following no symlink, so a name swapped since is refused (`ScopeDenied`). `path`:
    how the caller named it, for messages."""
    said = path if path is not None else str(real)
    root, rel = _beneath(policy, real)
    look = _looker(said, "read", real)
    fd = _opening(said, "read", lambda: open_file_beneath(root, rel, os.O_RDONLY, look))
    return os.fdopen(fd, "rb")


def write_file(policy: ScopePolicy, path: str, data: bytes) -> bool:
    """Create or overwrite the file `path` names with `data`, its missing parent directories
    made, when the scope lets it be written; whether it existed. `ScopeDenied`,
    IsADirectoryError or `SpecialFileError` (nothing written) otherwise."""
    real = policy.check(path, "write")
    root, rel = _beneath(policy, real)
    if not rel.name:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    parent = _opening(path, "write", lambda: make_dirs_beneath(root, rel.parent))
    try:
        _in_place(parent, path, "write", real.parent)
        look = _looker(path, "write", real)
        try:
            found = partial(open_file_beneath, parent, rel.name, os.O_WRONLY, look)
            fd = _opening(path, "write", found)
            existed = True
        except FileNotFoundError:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = _opening(path, "write", lambda: os.open(rel.name, flags, 0o666, dir_fd=parent))
            existed = False
    finally:
        os.close(parent)
    try:
        os.ftruncate(fd, 0)
        write_all(fd, data)
    finally:
        os.close(fd)
    return existed


def _beneath(policy: ScopePolicy, real: Path) -> tuple[Path, PurePosixPath]:
    """The root `real` lies under (the deepest, when added directories nest) and its path
    relative to it."""
    text = str(real)
    # (strings, not pathlib: grep opens every file of a tree through here)
    roots = [
        str(r) for r in (policy.root, *policy.extra_roots)
        if text == str(r) or text.startswith(str(r).rstrip("/") + "/")
    ]  # fmt: skip
    if not roots:  # (the check passed: it lies in one)
        raise ScopeDenied(f"{real} lies outside the session's directories")
    root = max(roots, key=len)
    return Path(root), PurePosixPath(text[len(root) :].lstrip("/") or ".")


def _opening(path: str, mode: Mode, open_it: Callable[[], int]) -> int:
    """`open_it()`, a symlink met or a step out turned into the scope's refusal."""
    try:
        return open_it()
    except OSError as e:
        if e.errno in _RACED and not isinstance(e, SpecialFileError):
            raise ScopeDenied(
                f"{mode} access to {path} refused: the path changed while it was being opened "
                "(a symlink or another directory appeared on the way)"
            ) from None
        raise


def _in_place(fd: int, path: str, mode: Mode, real: Path) -> None:
    """Refuse when what `fd` holds is not at `real` (moved since the check)."""
    where = fd_path(fd)
    if where is not None and where != str(real):
        raise ScopeDenied(
            f"{mode} access to {path} refused: the path changed while it was being opened"
        )


def _looker(path: str, mode: Mode, real: Path) -> Callable[[int], None]:
    """What is checked of the file found, before it is opened to read or write."""

    def look(fd: int) -> None:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        kind = special_kind(st.st_mode)
        if kind is not None:
            raise SpecialFileError(path, kind)
        _in_place(fd, path, mode, real)
        if mode == "write" and st.st_nlink > 1:
            raise ScopeDenied(
                f"write access to {path} refused: the file has other hard links, which may "
                "lie outside the scope"
            )

    return look
