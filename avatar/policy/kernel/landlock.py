"""Landlock (Linux ≥ 5.13): the kernel's own allow-list of what a process may do on files.

A ruleset *handles* some access rights — anything it handles is refused unless a rule allows
it beneath a file or directory — and confines the process that applies it and everything it
starts, for good. Rights not handled stay allowed, so one ruleset can confine writes only
(agents) or reads and writes (commands). The stub (`stub.c`) applies it, from the rights and
paths avatar gives, and its `--probe` says which ABI the kernel offers; this module holds the
rights and asks the kernel itself only where there is no stub. See landlock(7).
"""

from __future__ import annotations

import sys
from functools import cache

_SYS_CREATE_RULESET = 444  # same on every arch
_CREATE_RULESET_VERSION = 1

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
SCOPES = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL

# Network rights (ABI 4): TCP bind and connect, by port.
BIND_TCP = 1 << 0
CONNECT_TCP = 1 << 1
TCP = BIND_TCP | CONNECT_TCP


@cache
def abi_version() -> int:
    """The Landlock ABI the running kernel offers: 0 where there is none (not Linux, an old
    kernel, or Landlock disabled at boot)."""
    if sys.platform != "linux":
        return 0
    import ctypes  # (only here: the stub's probe tells a one-shot, without ctypes)

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def known_rights(abi: int) -> int:
    """The filesystem rights of `READ | WRITE` a kernel of Landlock ABI `abi` knows."""
    rights = READ | WRITE
    if abi < 2:
        rights &= ~REFER
    if abi < 3:
        rights &= ~TRUNCATE
    return rights
