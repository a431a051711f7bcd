"""Processes avatar starts die with avatar, even when avatar is killed with SIGKILL.

A process group cannot be told to die with its parent: `PR_SET_PDEATHSIG` reaches one
process, not the pipelines, background jobs and grandchildren a shell command starts. So the
first time avatar starts a sandboxed process it also starts a guard: a few lines of `sh`,
in a session of its own (a terminal's Ctrl-C and hang-up do not reach it), reading the
process groups avatar announces on a pipe. When the pipe closes — avatar exited, crashed or
was killed — the guard sends SIGKILL to every group still announced and exits.

A group leaves the list when avatar has seen it empty, so a group id the system hands out again
later is never killed by mistake while avatar lives.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading

# Runs under /bin/sh (dash or bash). `+ G` adds group G, `- G` removes it; EOF kills the rest.
_SCRIPT = """
trap '' INT TERM HUP QUIT
groups=""
while read -r op g; do
  case "$op" in
    +) groups="$groups $g" ;;
    -) kept=""; for x in $groups; do [ "$x" = "$g" ] || kept="$kept $x"; done; groups=$kept ;;
  esac
done
for g in $groups; do kill -9 "-$g" 2>/dev/null; done
"""


class ProcessGuard:
    """The one guard of this avatar process (`guard()`); `watch(pgid)` and `release(pgid)`."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._watched: set[int] = set()

    def _send(self, line: str) -> None:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = subprocess.Popen(
                    ["/bin/sh", "-c", _SCRIPT],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                    close_fds=True,
                    env={"PATH": os.defpath},  # it needs no key avatar holds
                )
                for pgid in self._watched:
                    self._write(f"+ {pgid}\n")
            self._write(line)

    def _write(self, line: str) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        with contextlib.suppress(OSError):
            self._proc.stdin.write(line.encode())
            self._proc.stdin.flush()

    def watch(self, pgid: int) -> None:
        """Kill process group `pgid` when avatar dies, unless released before."""
        self._watched.add(pgid)
        self._send(f"+ {pgid}\n")

    def release(self, pgid: int) -> None:
        """Forget group `pgid` once none of its processes is left (background jobs a command
        left behind keep it watched until avatar exits)."""
        if pgid not in self._watched:
            return
        try:
            os.killpg(pgid, 0)
            return  # still someone in it
        except ProcessLookupError:
            pass
        except PermissionError:
            return
        self._watched.discard(pgid)
        self._send(f"- {pgid}\n")

    def kill_all(self) -> None:
        """SIGKILL every watched group now (avatar is closing down)."""
        for pgid in list(self._watched):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
            self._watched.discard(pgid)

    def close(self, timeout: float = 2.0) -> None:
        """Do now what the guard does once avatar is gone, and end the guard: every group
        still watched is killed, and the guard's own process waited for (at most `timeout`
        seconds). A server that stops cleanly (`avatar serve --stop`) so leaves nothing of
        its own running when it says it has stopped; the guard comes back if anything is
        watched again."""
        self.kill_all()
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout)

    @property
    def pid(self) -> int | None:
        """The guard's process, while it runs (it starts with the first watched group)."""
        with self._lock:
            proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None


_guard = ProcessGuard()


def guard() -> ProcessGuard:
    """This process's guard."""
    return _guard


def start_group(
    argv: list[str], env: dict[str, str], cwd: str, pass_fds: tuple[int, ...] = ()
) -> subprocess.Popen[bytes]:
    """Start an agent's process: its three streams pipes (unbuffered), exactly `env`, in a
    session and process group of its own (a terminal's Ctrl-C is avatar's to pass on, and
    `end_group` ends all it started). OSError when it cannot start."""
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
        env=env,
        cwd=cwd,
        start_new_session=True,
        pass_fds=pass_fds,
    )


def end_group(popen: subprocess.Popen[bytes]) -> None:
    """End `popen`'s whole process group at once (it leads one: `start_new_session`), reap it
    and close its pipes: an agent started that nobody will talk to."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(popen.pid, signal.SIGKILL)
    popen.wait()
    for stream in (popen.stdin, popen.stdout, popen.stderr):
        if stream is not None:
            stream.close()
