"""Private namespaces for a sandboxed process: the walls Landlock cannot draw.

- **Mounts.** Landlock allows rights beneath a directory, so it cannot keep `.git/config`
  read-only while the rest of the project stays writable, nor hide `.env` while the rest stays
  readable. The process gets its own view of the mounts instead: protected paths are bound
  read-only onto themselves (writes fail with EROFS; renaming or removing a mount point fails
  with EBUSY), paths the scope denies are covered by an empty read-only stand-in, and pinned
  paths are bound onto themselves so they cannot be swapped for others.
- **Processes.** In a new PID namespace with its own `/proc`, the process sees only itself and
  its children: not avatar, not the user's shells, not their environments
  (`/proc/PID/environ` of a process of the same user is readable, and Landlock does not stop
  it). When the namespace's first process exits, the kernel ends every process in it.

As root this needs `unshare(CLONE_NEWNS | CLONE_NEWPID)`; other users get a user namespace
first, mapping their own uid and gid (files keep their owners). A new PID namespace holds the
*children* of the caller, so the child avatar forks (the "keeper") forks once more: the second
child is the namespace's first process and goes on to exec the command; the keeper waits for it,
exits as it exited, and holds nothing open meanwhile. `available()` tells, once per process,
whether the kernel allows all this here.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_CLONE_NEWNS = 0x00020000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWUSER = 0x10000000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_PR_SET_PDEATHSIG = 1
# statvfs flags that a bind mount in a user namespace must keep when made read-only
_LOCKED = ((os.ST_NOSUID, _MS_NOSUID), (os.ST_NODEV, _MS_NODEV), (os.ST_NOEXEC, _MS_NOEXEC))
# Signals the keeper takes back to their default action (avatar's handlers are not its own).
_DEFAULTS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE)


@cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = (
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_ulong,
        ctypes.c_void_p,
    )
    libc.unshare.argtypes = (ctypes.c_int,)
    return libc


def _flags(pid: bool = True) -> int:
    base = _CLONE_NEWNS | (_CLONE_NEWPID if pid else 0)
    return base if os.geteuid() == 0 else base | _CLONE_NEWUSER


@dataclass(frozen=True)
class Bind:
    """One mount in the child: `source` bound onto `target`, read-only unless `writable`."""

    source: bytes
    target: bytes
    flags: int  # flags the read-only remount keeps (nosuid, nodev, noexec where locked)
    writable: bool = False


class Namespaces:
    """What one sandboxed child enters: binds made in its private mount namespace, and (`pid`)
    a PID namespace with its own `/proc`. Built in the parent; `enter()` runs in the child.

    Commands get the PID namespace; agents do not: the first process of a PID namespace ignores
    every signal it has no handler for, and an agent must end on SIGTERM, with time to write
    out its files (it holds avatar's environment anyway, the secret a private `/proc` keeps)."""

    def __init__(
        self,
        read_only: list[Path],
        hidden: list[Path],
        blank_file: Path,
        blank_dir: Path,
        pinned: list[Path] | None = None,
        *,
        pid: bool = True,
        stand_ins: Sequence[tuple[Path, Path]] = (),
    ) -> None:
        binds = [_bind(p, p, writable=True) for p in pinned or ()]
        binds += [_bind(p, p) for p in read_only]
        binds += [_bind(blank_dir if p.is_dir() else blank_file, p) for p in hidden]
        # (stand-in, target): bound read-only over the target, like the blank ones above.
        binds += [_bind(source, target) for source, target in stand_ins]
        self.binds = [b for b in binds if b is not None]
        self._flags = _flags(pid)
        uid, gid = os.geteuid(), os.getegid()
        self._maps = (
            (b"/proc/self/setgroups", b"deny"),
            (b"/proc/self/uid_map", f"{uid} {uid} 1".encode()),
            (b"/proc/self/gid_map", f"{gid} {gid} 1".encode()),
        )
        self._max_fd = os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1024
        self._parent = os.getpid()
        _libc()  # loaded here, in the parent: loading a library after fork could deadlock

    @property
    def private_proc(self) -> bool:
        """Does the child get a PID namespace and its own `/proc`?"""
        return bool(self._flags & _CLONE_NEWPID)

    def enter(self) -> None:
        """In the child, between fork and exec: enter the namespaces and make the mounts; with a
        PID namespace only its first process returns (to exec), the keeper waits and exits. A
        failure ends the child (status 126) rather than let it run without its walls."""
        libc = _libc()
        pid = bool(self._flags & _CLONE_NEWPID)
        if pid:
            for sig in _DEFAULTS:
                signal.signal(sig, signal.SIG_DFL)
            # The keeper dies with avatar (and the namespace with it), even if avatar is killed
            # before the guard has heard of it.
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            if os.getppid() != self._parent:
                os._exit(126)  # avatar is already gone
        if libc.unshare(self._flags) != 0:
            _die(b"unshare")
        if self._flags & _CLONE_NEWUSER:
            for path, data in self._maps:
                fd = os.open(path, os.O_WRONLY)
                os.write(fd, data)
                os.close(fd)
        # Mounts made here must not propagate back to the parent's namespace.
        if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
            _die(b"mount --make-rprivate /")
        for bind in self.binds:
            if libc.mount(bind.source, bind.target, None, _MS_BIND, None) != 0:
                _die(b"bind mount of " + bind.target)
            if bind.writable:
                continue
            remount = _MS_BIND | _MS_REMOUNT | _MS_RDONLY | bind.flags
            if libc.mount(None, bind.target, None, remount, None) != 0:
                _die(b"read-only remount of " + bind.target)
        if not pid:
            return
        first = os.fork()
        if first == 0:
            # The namespace's first process: it dies with the keeper, sees only its own. (Its
            # parent is outside the namespace, so getppid() says 0 and cannot tell whether the
            # keeper is still there; the keeper does nothing but wait, and the guard watches.)
            # SIGKILL: the first process of a PID namespace ignores signals it has no handler
            # for, SIGTERM included.
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            proc_flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
            if libc.mount(b"proc", b"/proc", b"proc", proc_flags, None) != 0:
                _die(b"mount of a private /proc")
            return
        self._keep(first)

    def _keep(self, first: int) -> None:
        """The keeper: hold nothing open (avatar reads the command's output and the exec report
        until every holder closes them), wait for the first process, exit as it did."""
        os.closerange(0, self._max_fd)
        while True:
            try:
                _, status = os.waitpid(first, 0)
                break
            except InterruptedError:
                continue
            except ChildProcessError:
                os._exit(126)
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _bind(source: Path, target: Path, writable: bool = False) -> Bind | None:
    try:
        st = os.statvfs(target)
    except OSError:
        return None  # gone since the walk: nothing to cover
    flags = sum(ms for st_flag, ms in _LOCKED if st.f_flag & st_flag)
    return Bind(os.fsencode(source), os.fsencode(target), flags, writable)


def _die(what: bytes) -> None:
    os.write(2, b"avatar: the sandbox could not be applied (" + what + b")\n")
    os._exit(126)


@cache
def available() -> bool:
    """Can this process give its children private mount and PID namespaces? Probed once, in a
    forked child that only makes the system calls and exits."""
    if sys.platform != "linux":
        return False
    libc = _libc()
    flags = _flags()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child exits at once
        ok = libc.unshare(flags) == 0 and (
            libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) == 0
        )
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0
