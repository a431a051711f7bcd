"""Opening a path beneath a directory in one step: no symlink followed, nothing outside reached,
however the tree changes meanwhile.

avatar runs outside the walls it puts agents in, and reads and writes files on their behalf
(ACP's `fs/*` callbacks, the native tools). Checking a path and then opening it by name is a
race an agent can win: it swaps a checked directory for a symlink between the two, and avatar
writes where the agent may not, or reads what it may not. Here the path is resolved by the
kernel from a descriptor of the root, refusing every symlink on the way (ELOOP) and any step
out of the root (EXDEV): `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` where the kernel has
it (Linux ≥ 5.6), else a walk of `O_NOFOLLOW` opens, one component at a time, each relative to
the descriptor of the directory before. The caller then checks what was opened (`fd_path`),
not the name it asked for.

The paths given are already resolved (`os.path.realpath`): a symlink met here is one that was
not there when the path was checked.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path, PurePosixPath

_SYS_OPENAT2 = 437  # the same on every architecture (a "new" system call number)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
#: Opens a path without opening its file (Linux); elsewhere a directory is opened to read.
_O_PATH: int = getattr(os, "O_PATH", 0)
_DIR = (_O_PATH or os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))


@cache
def _syscall() -> Callable[..., int] | None:
    if sys.platform != "linux":
        return None
    try:
        syscall: Callable[..., int] = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    return syscall


def _call_openat2(base: int, rel: bytes, flags: int, mode: int, resolve: int) -> int:
    """`openat2(2)`: the descriptor, or -errno."""
    syscall = _syscall()
    assert syscall is not None
    how = _OpenHow(flags, mode, resolve)
    fd = syscall(
        ctypes.c_long(_SYS_OPENAT2),
        ctypes.c_int(base),
        ctypes.c_char_p(rel),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    return int(fd) if fd >= 0 else -ctypes.get_errno()


def parts(rel: str | PurePosixPath) -> list[str]:
    """The components of relative path `rel`; ValueError for `..`, an absolute path or an
    empty component (a resolved path has none)."""
    text = str(rel)
    if text in ("", "."):
        return []
    if text.startswith("/"):
        raise ValueError(f"{text!r} is not a relative path")
    out = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in out:
        raise ValueError(f"{text!r} steps out with '..'")
    return out


def open_root(root: Path | str) -> int:
    """A descriptor of directory `root` (itself opened without following a last symlink)."""
    return os.open(root, _DIR)


def open_beneath(
    root: Path | str | int,
    rel: str | PurePosixPath,
    flags: int,
    mode: int = 0o666,
    *,
    openat2: bool = True,
) -> int:
    """Open `rel` beneath directory `root` (a path, or a descriptor of it) with `flags`,
    following no symlink; OSError ELOOP when one is met, EXDEV when the path leaves `root`.
    `openat2=False` walks even where the kernel has `openat2` (as on kernels without it)."""
    names = parts(rel)
    if isinstance(root, int):
        return _open_from(root, names, flags, mode, openat2)
    base = open_root(root)
    try:
        return _open_from(base, names, flags, mode, openat2)
    finally:
        os.close(base)


def _open_from(base: int, names: list[str], flags: int, mode: int, openat2: bool) -> int:
    fd = _by_openat2(base, "/".join(names) or ".", flags, mode) if openat2 else None
    return fd if fd is not None else _walk(base, names, flags, mode)


def _by_openat2(base: int, rel: str, flags: int, mode: int) -> int | None:
    """One `openat2` call; None where the kernel has none (the walk does it then)."""
    if not _openat2_works():
        return None
    resolve = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
    mode = mode if flags & os.O_CREAT else 0  # (openat2 refuses a mode it would not use)
    flags = (flags | os.O_CLOEXEC) & ~os.O_NOFOLLOW  # (RESOLVE_NO_SYMLINKS says ELOOP)
    fd = _call_openat2(base, os.fsencode(rel), flags, mode, resolve)
    if fd < 0:
        raise OSError(-fd, os.strerror(-fd), rel)
    return fd


@cache
def _openat2_works() -> bool:
    """Does this kernel have `openat2` (Linux ≥ 5.6, and no seccomp filter refusing it)?"""
    if _syscall() is None:
        return False
    fd = _call_openat2(-100, b"/", _DIR, 0, _RESOLVE_BENEATH)  # (-100: AT_FDCWD)
    if fd < 0:
        return -fd not in (errno.ENOSYS, errno.EPERM)
    os.close(fd)
    return True


def _walk(base: int, names: list[str], flags: int, mode: int) -> int:
    """The same, by `O_NOFOLLOW` opens one component at a time."""
    if not names:
        return os.open(".", flags | os.O_CLOEXEC, mode, dir_fd=base)
    fd = os.dup(base)
    try:
        for name in names[:-1]:
            step = _nofollow(fd, name, _DIR, 0)
            os.close(fd)
            fd = step
        last = _nofollow(fd, names[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        if _O_PATH and flags & _O_PATH and stat.S_ISLNK(os.fstat(last).st_mode):
            os.close(last)  # (O_PATH | O_NOFOLLOW opens the link itself)
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), names[-1])
        return last
    finally:
        os.close(fd)


def _nofollow(fd: int, name: str, flags: int, mode: int) -> int:
    """`openat(fd, name, flags)` with O_NOFOLLOW; a symlink is ELOOP (with O_DIRECTORY the
    kernel says ENOTDIR for one)."""
    try:
        return os.open(name, flags, mode, dir_fd=fd)
    except NotADirectoryError:
        if stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name) from None
        raise


def make_dirs_beneath(root: Path | str | int, rel: str | PurePosixPath) -> int:
    """A descriptor of directory `rel` beneath `root`, each missing directory on the way made
    (`mkdirat` relative to the one before, so none is made anywhere else)."""
    fd = open_root(root) if not isinstance(root, int) else os.dup(root)
    try:
        for name in parts(rel):
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=fd)
            step = open_beneath(fd, name, _DIR)
            os.close(fd)
            fd = step
        return fd
    except BaseException:
        os.close(fd)
        raise


def fd_path(fd: int) -> str | None:
    """Where the file open on `fd` is now, as the kernel names it (Linux); None elsewhere."""
    if sys.platform != "linux":
        return None
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def open_file_beneath(
    root: Path | str | int,
    rel: str | PurePosixPath,
    flags: int,
    check: Callable[[int], None],
) -> int:
    """Open existing file `rel` beneath `root` with `flags` after `check(fd)` has looked at
    what was found (its kind, where it is) and not raised. On Linux the file is found with
    `O_PATH` (opening nothing: a device's open would act, a FIFO's would wait), checked, then
    opened through that descriptor — the same file, not its name again. Elsewhere it is opened
    `O_NONBLOCK` and checked after."""
    if not _O_PATH:
        fd = open_beneath(root, rel, flags | os.O_NONBLOCK)
        try:
            check(fd)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd
    found = open_beneath(root, rel, _O_PATH)
    try:
        check(found)
        return os.open(f"/proc/self/fd/{found}", flags | os.O_CLOEXEC | os.O_NOCTTY)
    finally:
        os.close(found)
