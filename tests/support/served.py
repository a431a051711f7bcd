"""`avatar serve` in tests: started in the background on the test's own runtime dir, stopped
afterwards; the process and socket facts the server's tests read from /proc; and a live
session's events gathered in-process (`collect`)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from tests.support.drive import avatar, start

Event = dict[str, Any]  #: one event of a live session (`avatar.server.live`)


@contextlib.asynccontextmanager
async def hub_served(hub: Any, runtime: Path, monkeypatch: Any) -> AsyncIterator[None]:
    """`hub` served in-process on the socket of the runtime dir `runtime` (made; the test's
    `XDG_RUNTIME_DIR` from now on), stopped afterwards."""
    from avatar.server.serving import Server

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    runtime.mkdir(mode=0o700)
    server = Server(hub)
    up = asyncio.Event()
    served = asyncio.ensure_future(server.serve(up.set))
    await up.wait()
    try:
        yield
    finally:
        server.stop()
        await served


def collect(
    stream: AsyncIterator[dict[str, Any]], into: list[dict[str, Any]]
) -> asyncio.Task[None]:
    """Read a live session's subscription into `into` as its events come (a subscribed
    client keeps the session live between turns)."""

    async def run() -> None:
        async for event in stream:
            into.append(event)

    return asyncio.ensure_future(run())


def socket_of(env: dict[str, str]) -> Path:
    """Where the server of `env` listens (its XDG_RUNTIME_DIR: see `avatar_env`)."""
    return Path(env["XDG_RUNTIME_DIR"]) / "avatar" / "server.sock"


@contextlib.contextmanager
def serving(env: dict[str, str], cwd: Path, *args: str) -> Iterator[subprocess.Popen[str]]:
    """`avatar serve ARGS` running until the block ends (then `serve --stop`, and a kill if
    that did not end it)."""
    proc = start(env, cwd, "serve", *args)
    deadline = time.monotonic() + 30
    while not socket_of(env).exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            avatar(env, cwd, "serve", "--stop")
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def descendants(pid: int) -> set[int]:
    """The pids of every process below `pid` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def command_line(pid: int) -> str:
    """The command line of `pid` ("" once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def processes_with(text: str) -> list[int]:
    """Pids of the processes avatar started whose command line holds `text` (an agent's state
    dir, say): the top of each tree, so a walled agent counts once (the walls' exec stub that
    avatar started waits outside with the same arguments, its init and the agent inside)."""
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with contextlib.suppress(OSError, ValueError, IndexError):
                if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    stat = (entry / "stat").read_text()
                    found[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return [pid for pid, parent in found.items() if parent not in found and alive(pid)]


def tcp_listening_inodes() -> set[str]:
    """Socket inodes listening on TCP (v4 and v6), from /proc/net."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # LISTEN
                    inodes.add(fields[9])
    return inodes


def socket_inodes(pid: int) -> set[str]:
    """The inodes of the sockets `pid` holds open."""
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                found.add(target[8:-1])
    return found


def terminate(proc: subprocess.Popen[str]) -> None:
    """SIGTERM, as a supervisor stops it."""
    proc.send_signal(signal.SIGTERM)
