"""Work for one client done apart from the server's event loop, in a child process forked from
the server (docs/design.md §11: served reads run off the event loop).

A served read (`session list`, `show`, `search`, …) runs as the client's process would have:
with the client's environment, directory and output streams, which are the process's own
(`os.environ`, the working directory, `sys.stdout`). In a thread they would be the event loop's
too, and every other client's; in a child forked for the read they are the child's alone. The
child has everything the server has loaded (so a read costs what it costs in a warm process,
plus a fork: ~1 ms), writes its frames straight to the client's socket and exits; what it
allocated goes with it, so reads never grow the server. The server meanwhile serves everyone
else, and reaps the child when it ends (its pidfd, watched by the loop). A client's cancel
(Ctrl-C) interrupts the child as Ctrl-C interrupts a command (exit 130).

Nothing of the server's runs in the child but the work: it leaves with `os._exit`, never
returning into the loop, and it closes no connection of the server's (they are the server's:
the child's copies go with it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import warnings
from collections.abc import Callable
from typing import Any

from avatar.server.peer import Peer
from avatar.server.protocol import encode

#: Sends one frame to the client (in the child: straight to its socket).
Send = Callable[[dict[str, Any]], None]
#: The work: given how to send frames, the command's exit code.
Work = Callable[[Send], int]

#: Seconds the child may block on a client that reads nothing before it gives up.
_STALLED = 600.0


async def run_apart(peer: Peer, work: Work) -> None:
    """Run `work` for `peer` in a child forked from the server, which sends its output and
    its `exit` frame; wait for it while serving everyone else."""
    transport = peer.writer.transport
    sock = peer.writer.get_extra_info("socket")
    if sock is None:  # (not a socket: nothing to hand a child)
        peer.send({"exit": _sent_in_child(work, peer.send)})
        return
    transport.set_write_buffer_limits(0)  # what the server wrote goes out before the child's
    await peer.writer.drain()
    with warnings.catch_warnings():  # (Python 3.12+ warns of forking with threads: the
        warnings.simplefilter("ignore", DeprecationWarning)  # child runs none of theirs)
        pid = os.fork()
    if pid == 0:  # the child
        _child(sock.fileno(), work)
    await _reaped(pid, peer)


def _child(fd: int, work: Work) -> None:
    """The child's whole life: the work, its exit frame, `os._exit` (never returns)."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)  # (the loop's, in the parent)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a cancel: KeyboardInterrupt
        out = socket.socket(fileno=os.dup(fd))
        out.settimeout(_STALLED)  # (the descriptor stays non-blocking: it is shared)

        def send(frame: dict[str, Any]) -> None:
            out.sendall(encode(frame))

        try:
            send({"exit": _sent_in_child(work, send)})
            code = 0
        except OSError:  # the client left
            code = 0
    finally:
        os._exit(code)


def _sent_in_child(work: Work, send: Send) -> int:
    try:
        return work(send)
    except KeyboardInterrupt:
        return 130


async def _reaped(pid: int, peer: Peer) -> None:
    """Wait for the child `pid`: a cancel from the client interrupts it; a child that died
    without its exit frame (killed) is said in one line."""
    ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    loop = asyncio.get_running_loop()
    pidfd = os.pidfd_open(pid)

    def exited() -> None:
        if not ended.done():
            ended.set_result(None)

    loop.add_reader(pidfd, exited)
    listening = asyncio.ensure_future(_cancels(peer, pid))
    try:
        await ended
    except asyncio.CancelledError:  # the server stops: so does the work it does
        os.kill(pid, signal.SIGKILL)
        raise
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)
        listening.cancel()
        _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) != signal.SIGINT:
        name = signal.Signals(os.WTERMSIG(status)).name
        peer.send({"exit": 1, "error": f"the command ended in the server by {name}"})
    elif os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0:
        peer.send({"exit": 1, "error": "the command failed in the server"})


async def _cancels(peer: Peer, pid: int) -> None:
    """The client's frames while its child works: a cancel interrupts it (Ctrl-C)."""
    async for frame in peer.frames():
        if frame.get("op") == "cancel":
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)
