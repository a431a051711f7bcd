"""Served commands in bulk, as clients send them (`avatar.server.protocol`), without starting
an `avatar` process for each: a `run` request as `avatar.server.client.served` makes it, `ps`,
and an attach to a hosted session and its detach (the host stands for a REPL that runs the
session in its own process). For the memory test and benchmark.

Every request comes from this one process, and the server tells its clients apart by their
process: send them one after another (concurrent clients are processes of their own, as in the
stress test). A command's answer is what its client would print and its exit code (`Answer`);
a client that waits past its timeout is an `Answer` with `timed_out`.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avatar.server.environment import split
from avatar.server.protocol import encode, socket_path


@dataclass
class Answer:
    """What a served command's client got: its output, exit code (None: no exit frame) and
    the error line, or that it waited past its timeout."""

    out: str = ""
    err: str = ""
    code: int | None = None
    error: str | None = None
    timed_out: bool = False
    seconds: float = 0.0


def _frames(sock: socket.socket) -> Any:
    buffer = b""
    while True:
        end = buffer.find(b"\n")
        if end >= 0:
            line, buffer = buffer[:end], buffer[end + 1 :]
            yield json.loads(line)
            continue
        chunk = sock.recv(1 << 16)
        if not chunk:
            return
        buffer += chunk


def _connect(env: dict[str, str], timeout: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.connect(socket_path(env))
    return sock


def run(env: dict[str, str], cwd: Path, *argv: str, timeout: float = 60) -> Answer:
    """`avatar ARGV` through the server of `env`, as its client runs it (stdin empty, no
    terminal)."""
    started = time.monotonic()
    answer = Answer()
    carried, names = split(env)
    try:
        with _connect(env, timeout) as sock:
            request = {
                "op": "run",
                "argv": list(argv),
                "cwd": str(cwd),
                "env": carried,
                "names": names,
                "tty": [False, False, False],
                "columns": 80,
            }
            sock.sendall(encode(request))
            for frame in _frames(sock):
                if "out" in frame:
                    answer.out += frame["out"]
                elif "err" in frame:
                    answer.err += frame["err"]
                elif "env?" in frame:
                    wanted = {n: env[n] for n in frame["env?"] if n in env}
                    sock.sendall(encode({"env": wanted}))
                elif frame.get("stdin?"):
                    sock.sendall(encode({"stdin": ""}))
                elif frame.get("fallback"):
                    answer.error = f"fallback: {frame.get('notice')}"
                    break
                elif "exit" in frame:
                    answer.code = int(frame["exit"])
                    answer.error = frame.get("error")
                    break
    except TimeoutError:
        answer.timed_out = True
    answer.seconds = time.monotonic() - started
    return answer


def ps(env: dict[str, str], timeout: float = 30) -> list[dict[str, Any]]:
    """`avatar ps --json` as its client asks it."""
    with _connect(env, timeout) as sock:
        sock.sendall(encode({"op": "ps"}))
        frame = next(_frames(sock))
    return list(frame["live"])


def attach_detach(env: dict[str, str], session_id: str, timeout: float = 30) -> dict[str, Any]:
    """Attach to the live session `session_id` and leave at once (Ctrl-D): its first frame."""
    with _connect(env, timeout) as sock:
        sock.sendall(encode({"op": "attach", "ref": session_id, "client": "attach:load"}))
        frames = _frames(sock)
        first: dict[str, Any] = next(frames)
    return first


@dataclass
class Host:
    """A session hosted by a REPL-like client (`{"op": "host"}`): listed by the server while
    this connection stays, answering every history request with an empty conversation."""

    env: dict[str, str]
    session_id: str
    cwd: Path
    asked: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._sock = _connect(self.env, 30)
        self._sock.settimeout(None)
        info = {
            "provider": "fake",
            "session_id": self.session_id,
            "project": str(self.cwd),
            "state": "idle",
            "model": None,
            "tokens": 0,
            "queued": 0,
        }
        started = {
            "type": "session",
            "provider": "fake",
            "session_id": self.session_id,
            "how": "new",
            "cwd": str(self.cwd),
        }
        self._sock.sendall(
            encode(
                {
                    "op": "host",
                    "client": f"repl:{os.getpid()}",
                    "since": time.time(),
                    "info": info,
                    "started": started,
                    "running": None,
                }
            )
        )
        self._reading = threading.Thread(target=self._read, daemon=True)
        self._reading.start()

    def _read(self) -> None:
        try:
            for frame in _frames(self._sock):
                if frame.get("op") == "history":
                    self.asked.append(int(frame.get("id") or 0))
                    self._sock.sendall(encode({"history": [], "id": frame.get("id")}))
        except OSError:
            return

    def close(self) -> None:
        """The REPL leaves."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # (wakes the reader)
        self._sock.close()
        self._reading.join(5)


def rss(pid: int) -> int:
    """The resident set of `pid`, in bytes (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")
