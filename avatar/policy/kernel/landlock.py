"""Landlock (Linux ≥ 5.13): the kernel's own allow-list of what a process may do on files.

Three system calls, through `ctypes` (no binding on PyPI covers applying a ruleset between
fork and exec, which is where avatar needs it): `landlock_create_ruleset` makes a ruleset that
*handles* some access rights — anything it handles is refused unless a rule allows it —
`landlock_add_rule` allows rights beneath one file or directory, and `landlock_restrict_self`
confines the calling thread and everything it starts, for good. Rights not handled stay
allowed, so one ruleset can confine writes only (agents) or reads and writes (commands).

The ruleset is built in the parent (`Ruleset`); the child only calls `restrict()`, two system
calls, between fork and exec. See landlock(7).
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # same on every arch
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# Filesystem access rights (landlock.h), with the ABI that introduced each.
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2: link or rename a file into another directory
TRUNCATE = 1 << 14  # ABI 3
# IOCTL_DEV (ABI 5) is never handled: terminals and /dev/null need their ioctls.

#: Reading a tree: open files, list directories, run programs.
READ = EXECUTE | READ_FILE | READ_DIR
#: Changing a tree: every right that writes, creates, removes or renames.
WRITE = (
    WRITE_FILE
    | REMOVE_DIR
    | REMOVE_FILE
    | MAKE_CHAR
    | MAKE_DIR
    | MAKE_REG
    | MAKE_SOCK
    | MAKE_FIFO
    | MAKE_BLOCK
    | MAKE_SYM
    | REFER
    | TRUNCATE
)
#: The rights that make sense on a file (not a directory) as a rule's object.
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE

# Scopes (ABI 6): no signals to, and no abstract unix sockets of, processes outside the domain.
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


class LandlockError(OSError):
    """A Landlock call failed (the message names the call and the path, if any)."""


@cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


@cache
def abi_version() -> int:
    """The Landlock ABI the running kernel offers: 0 where there is none (not Linux, an old
    kernel, or Landlock disabled at boot)."""
    if sys.platform != "linux":
        return 0
    try:
        version = _libc().syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def _known_rights(abi: int) -> int:
    rights = READ | WRITE
    if abi < 2:
        rights &= ~REFER
    if abi < 3:
        rights &= ~TRUNCATE
    return rights


@dataclass(frozen=True)
class Rule:
    """Allow `rights` beneath `path` (a directory's whole tree, or one file)."""

    path: Path
    rights: int


class Ruleset:
    """A ruleset built in the parent and applied in a child with `restrict()`.

    `handled` says which rights the ruleset governs (others stay allowed); each rule allows some
    of them beneath a path. Paths that do not exist are skipped: there is nothing to allow."""

    def __init__(self, handled: int, rules: Iterable[Rule], scoped: bool = True) -> None:
        abi = abi_version()
        if abi < 1:
            raise LandlockError("Landlock is not available on this kernel")
        self.abi = abi
        self.handled = handled & _known_rights(abi)
        scopes = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if scoped and abi >= 6 else 0
        attr = _RulesetAttr(self.handled, 0, scopes)
        size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else ctypes.sizeof(ctypes.c_uint64)
        fd = _libc().syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), size, 0)
        if fd < 0:
            raise LandlockError(ctypes.get_errno(), "landlock_create_ruleset failed")
        self.fd = int(fd)
        try:
            for rule in rules:
                self._add(rule)
        except BaseException:
            self.close()
            raise

    def _add(self, rule: Rule) -> None:
        try:
            target = os.open(rule.path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return  # nothing there: nothing to allow
        try:
            rights = rule.rights & self.handled
            if not stat.S_ISDIR(os.fstat(target).st_mode):
                rights &= FILE_RIGHTS
            if not rights:
                return
            attr = _PathBeneathAttr(rights, target)
            if _libc().syscall(_SYS_ADD_RULE, self.fd, _RULE_PATH_BENEATH, ctypes.byref(attr), 0):
                raise LandlockError(ctypes.get_errno(), f"landlock_add_rule failed for {rule.path}")
        finally:
            os.close(target)

    def allow_here(self, path: bytes, rights: int) -> None:
        """In the child, before `restrict()`: allow `rights` beneath `path` as the child sees it
        (a `/proc` mounted after the ruleset was built is another inode than the parent's)."""
        try:
            target = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return
        attr = _PathBeneathAttr(rights & self.handled, target)
        _libc().syscall(_SYS_ADD_RULE, self.fd, _RULE_PATH_BENEATH, ctypes.byref(attr), 0)
        os.close(target)

    def restrict(self) -> None:
        """Confine the calling thread (the child, before exec) to this ruleset, for good.

        Runs between fork and exec: only system calls, no allocation worth the name. On failure
        the child exits with status 126 rather than run unconfined."""
        libc = _libc()
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) or libc.syscall(
            _SYS_RESTRICT_SELF, self.fd, 0
        ):
            os.write(2, b"avatar: the sandbox could not be applied (landlock_restrict_self)\n")
            os._exit(126)

    def close(self) -> None:
        """Release the ruleset's descriptor (the parent's copy)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        self.close()
