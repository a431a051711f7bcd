"""The commands a running server runs for its clients (`avatar.server.client.served`).

A client sends its argv, cwd, environment and which of its streams are terminals; the server
runs the command as that process would have (the same click command, the same code), with its
stdout and stderr sent back as they are written. Commands that read in one go (`session list`,
`info`, `show`, `search`, `ps`) run at once in the server's warm process; `chat` is parsed and
checked the same way, then runs on the hub (`avatar.cli.chat_served`), where its session is
live for other clients. Anything else, or a command that wants the client's stdin, is declined
and the client runs it itself.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

from avatar.cli.commands import run
from avatar.cli.failing import failed
from avatar.cli.served_run import SERVING, Chunks, Declined, NoStdin, Served
from avatar.server.client import command_words
from avatar.server.hub import Hub
from avatar.server.peer import Peer

#: `session` subcommands that only read (and take no agent): they run in the server.
READING = frozenset({"list", "info", "show", "search"})


def runs_here(argv: list[str]) -> bool:
    """Whether the server runs `avatar argv` (else the client does)."""
    words = command_words(argv)
    if not words or {"--help", "-h", "--refresh"} & set(argv):
        return False
    if words[0] == "session":
        return len(words) > 1 and words[1] in READING
    return words[0] in ("chat", "ps")


async def run_for(hub: Hub, frame: dict[str, Any], peer: Peer) -> None:
    """Run the command of a `run` frame for `peer` (the server's `Runner`)."""
    argv = [str(a) for a in frame.get("argv", [])]
    if not runs_here(argv):
        peer.send({"fallback": True})
        return
    tty = [bool(t) for t in frame.get("tty", [False, False, False])]
    served = Served(hub, peer, Chunks(peer, "out", tty[1]), Chunks(peer, "err", tty[2]))
    env = {str(k): str(v) for k, v in frame.get("env", {}).items()}
    if frame.get("columns") and "COLUMNS" not in env:
        env["COLUMNS"] = str(frame["columns"])
    client = NoStdin(tty[0]), env, str(frame.get("cwd", "/"))
    try:
        with _as_client(served, *client):
            code = _run(argv)
    except Declined:
        peer.send({"fallback": True})
        return
    if served.later is not None:
        try:
            code = await served.later()
        except Exception as e:  # the error contract, as `avatar` alone keeps it
            with _as_client(served, *client):
                code = failed(e)
    peer.send({"exit": code})


def _run(argv: list[str]) -> int:
    try:
        run(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 1
    return 0


@contextlib.contextmanager
def _as_client(served: Served, stdin: NoStdin, env: dict[str, str], cwd: str) -> Iterator[None]:
    """The process as the client's: its streams, environment and directory (one command at a
    time: this runs on the event loop without awaiting)."""
    streams = sys.stdin, sys.stdout, sys.stderr
    environ, here = dict(os.environ), os.getcwd()
    token = SERVING.set(served)
    try:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        sys.stdin, sys.stdout, sys.stderr = stdin, served.out, served.err
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams
        os.environ.clear()
        os.environ.update(environ)
        os.chdir(here)
        SERVING.reset(token)
