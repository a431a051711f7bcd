"""The client side of the server's socket (stdlib only: `avatar` reaches the server before it
imports click, pydantic or the ACP SDK, so that a command through the server costs little
more than Python's own start).

`connect()` is a single `connect(2)`: no server, no socket file or nobody listening, answers
None at once. `served(args)` runs an `avatar` command through the server when one runs and
the command is one it runs (`chat`, the `session` listings, `ps`), printing what it prints and
returning its exit code; None means run it here, as without a server.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # (`signal` without its enums: no stubs)
import _socket
import os
import sys

from avatar.server.protocol import decode, encode, socket_path

# Not `typing`, `socket` or `signal`: their imports (enum, mostly) would cost a command through
# the server more than the rest of its client (measured with -X importtime).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType
    from typing import Any

#: Global options that take a value (docs/design.md §3), to find the command word after them.
_VALUED = frozenset({"-p", "--provider", "-m", "--model", "--preset", "-C", "-c", "--config"})
#: Commands a running server runs for the client (the first words of their argv).
SERVED = frozenset({"chat", "session", "ps"})


class Connection:
    """One connection to the server: frames out, frames in."""

    def __init__(self, sock: _socket.socket) -> None:
        self.sock = sock
        self._buffer = b""

    def send(self, frame: dict[str, Any]) -> None:
        """Send one frame."""
        self.sock.sendall(encode(frame))

    def frames(self) -> Iterator[dict[str, Any]]:
        """The frames the server sends, until it closes the connection."""
        while True:
            line, found, rest = self._buffer.partition(b"\n")
            if found:
                self._buffer = rest
                yield decode(line)
                continue
            chunk = self.sock.recv(65536)
            if not chunk:
                return
            self._buffer += chunk

    def request(self, frame: dict[str, Any]) -> dict[str, Any]:
        """Send `frame` and return the one frame answering it (`{}` if the server left)."""
        self.send(frame)
        return next(self.frames(), {})

    def close(self) -> None:
        """Close the connection."""
        self.sock.close()


def connect(env: dict[str, str] | None = None) -> Connection | None:
    """A connection to the user's server, or None when none runs."""
    if (env if env is not None else os.environ).get("AVATAR_NO_SERVER"):
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(socket_path(env))
    except OSError:
        sock.close()
        return None
    return Connection(sock)


def live_ids(env: dict[str, str] | None = None) -> set[str]:
    """The ids of the running server's live sessions that a client holds or that are in a
    turn (none when no server runs). One kept loaded after its last client left is none of
    them: the server lets it go, unjoined, once it changed (`avatar.server.kept`)."""
    conn = connect(env)
    if conn is None:
        return set()
    try:
        frame = conn.request({"op": "ps"})
    except OSError:
        return set()
    finally:
        conn.close()
    live = frame.get("live", [])
    return {str(i.get("session_id")) for i in live if i.get("clients") or i.get("state") != "idle"}


def command_words(args: list[str]) -> list[str]:
    """The words of `args` after the global options (`-p X chat hi` → `chat hi`)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _VALUED:
            i += 2
        elif arg == "--trust" or (arg.startswith("--") and "=" in arg) or arg[:2] in _VALUED:
            i += 1
        else:
            break
    return args[i:]


def served(args: list[str]) -> int | None:
    """Run `avatar args` through the running server; None when none runs or it declines (the
    caller then runs the command itself). Ctrl-C asks the server to cancel; a second one
    leaves at once (exit 130)."""
    words = command_words(args)
    if not words or words[0] not in SERVED:
        return None
    conn = connect()
    if conn is None:
        return None
    streams = (sys.stdin, sys.stdout, sys.stderr)
    try:
        conn.send(
            {
                "op": "run",
                "argv": args,
                "cwd": os.getcwd(),
                "env": dict(os.environ),
                "tty": [s is not None and s.isatty() for s in streams],
                "columns": _columns(),
            }
        )
    except OSError:
        conn.close()
        return None
    interrupted: list[int] = []

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if interrupted:
            raise KeyboardInterrupt
        interrupted.append(signum)
        try:
            conn.send({"op": "cancel"})
        except OSError:
            raise KeyboardInterrupt from None

    old = _signal.signal(_signal.SIGINT, on_sigint)
    try:
        return _relay(conn)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): as without a server
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        _signal.signal(_signal.SIGINT, old)
        conn.close()


def _relay(conn: Connection) -> int | None:
    code: int | None = 1
    for frame in conn.frames():
        if "out" in frame:
            sys.stdout.write(frame["out"])
            sys.stdout.flush()
        elif "err" in frame:
            sys.stderr.write(frame["err"])
            sys.stderr.flush()
        elif frame.get("fallback"):
            if frame.get("notice"):  # (run here, not there: said once)
                sys.stderr.write(f"notice: {frame['notice']}; running without it\n")
            return None
        elif "exit" in frame:
            code = int(frame["exit"])
            if "error" in frame:
                sys.stderr.write(f"avatar: {frame['error']}\n")
            break
    else:  # the server went away mid-command
        sys.stderr.write("avatar: the server ended before the command did\n")
    return code


def _columns() -> int:
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 0


def wait_released(lock: str | os.PathLike[str], seconds: float) -> None:
    """Wait (up to `seconds`) until no server holds `lock`: it has closed its live sessions
    and stopped their agents. A process that has exited holds no lock, reaped or not."""
    import fcntl
    import time

    deadline = time.monotonic() + seconds
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        while time.monotonic() < deadline:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                time.sleep(0.05)
                continue
            fcntl.flock(fd, fcntl.LOCK_UN)
            return
    finally:
        os.close(fd)
