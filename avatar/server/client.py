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

from avatar.server.environment import split
from avatar.server.protocol import ProtocolError, decode, encode, socket_path

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
        self._buffer = bytearray()
        self._scanned = 0  # how far the buffer holds no newline (a long frame is scanned once)

    def send(self, frame: dict[str, Any]) -> None:
        """Send one frame."""
        self.sock.sendall(encode(frame))

    def frames(self) -> Iterator[dict[str, Any]]:
        """The frames the server sends, until it closes the connection, each whole however
        long; a ProtocolError for a line that is not one."""
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                self._scanned = 0
                yield decode(line, "a frame")
                continue
            self._scanned = len(self._buffer)
            chunk = self.sock.recv(1 << 16)
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
    except (OSError, ProtocolError):
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
    carried, names = split(os.environ)
    try:
        conn.send(
            {
                "op": "run",
                "argv": args,
                "cwd": os.getcwd(),
                "env": carried,
                "names": names,
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
    except ProtocolError as e:
        sys.stderr.write(f"avatar: the server sent {e}\n")
        return 1
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
        elif "env?" in frame:  # the variables of these names the providers declare
            wanted = [str(name) for name in frame["env?"]]
            conn.send({"env": {name: os.environ[name] for name in wanted if name in os.environ}})
        elif frame.get("stdin?"):  # a command that reads its input whole (`chat -`)
            conn.send({"stdin": _stdin()})
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


def _stdin() -> str:
    """All of stdin, as the frame carries it (bytes that are not UTF-8 kept, as escapes)."""
    stream = sys.stdin
    data = stream.buffer.read() if stream is not None else b""
    return data.decode("utf-8", "surrogateescape")


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


def pidfd_of(conn: Connection) -> int | None:
    """A pidfd of the server at the other end of `conn` (the caller closes it): the kernel's
    own where it gives one, else one opened on the pid it names (None: the server is gone)."""
    import socket

    from avatar.server.peer import peer_creds, peer_pidfd

    sock = socket.socket(fileno=os.dup(conn.sock.fileno()))
    try:
        fd = peer_pidfd(sock)
        if fd is not None:
            return fd
        try:
            return os.pidfd_open(peer_creds(sock)[0])
        except OSError:
            return None
    finally:
        sock.close()


def wait_ended(pidfd: int, seconds: float) -> None:
    """Wait (up to `seconds`) until the process of `pidfd` has ended (reaped or not)."""
    import select

    poller = select.poll()
    poller.register(pidfd, select.POLLIN)  # (readable once the process has exited)
    poller.poll(int(seconds * 1000))
