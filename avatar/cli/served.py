"""The commands a running server runs for its clients (`avatar.server.client.served`).

A client sends its argv, cwd, the environment avatar and the agents use (the server asks for
the variables the providers declare: `avatar.server.environment`) and which of its streams are
terminals; the server runs the command as that process would have (the same click command, the
same code), with its stdout and stderr sent back as they are written. Commands that read in
one go (`session list`, `info`, `show`, `search`) run in a child forked from the server
(`avatar.server.apart`): off the event loop, so that a long search holds up nobody else; `ps`
reads the hub, at once, in the server; `chat` is parsed and checked the same way, then runs on
the hub (`avatar.cli.chat_served`), where its session is live for other clients. A command
that reads its stdin whole (`chat -`) gets it from the client; anything else, or a command that
wants more of the client's stdin, is declined and the client runs it itself.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from avatar.cli.commands import run
from avatar.cli.failing import failed
from avatar.cli.served_run import SERVING, Chunks, Declined, NoStdin, Served
from avatar.providers.registry import shipped
from avatar.server.apart import Send, run_apart
from avatar.server.client import command_words
from avatar.server.declared import declared_variables
from avatar.server.environment import matches
from avatar.server.hub import Hub
from avatar.server.peer import Peer

#: `session` subcommands that only read (and take no agent): they run in the server.
READING = frozenset({"list", "info", "show", "search"})
#: What the reads import, loaded by the server before it serves (`preload`): a read runs in a
#: child of the server, whose imports die with it.
READS_IMPORT = (
    "avatar.cli.sessions",
    "avatar.cli.library_commands",
    "avatar.cli.output.table",
    "avatar.cli.output.tree",
    "avatar.engine.engine",
    "avatar.library.library",
    "avatar.library.search.index",
    "avatar.library.search.query",
    "avatar.native.models",
    "avatar.policy.terminal_text",
    "avatar.providers.facts",
)


def preload() -> None:
    """Load what the reads use, once, in the server: the modules (`READS_IMPORT`, and each
    provider's store) and the provider table. A read's child then starts warm (~10 ms for a
    listing, against ~110 ms in a child that imports it all)."""
    import importlib

    stores = [spec.store.partition(":")[0] for spec in shipped().values() if spec.store]
    for module in (*READS_IMPORT, *stores):
        importlib.import_module(module)


def runs_here(argv: list[str]) -> bool:
    """Whether the server runs `avatar argv` (else the client does)."""
    words = command_words(argv)
    if not words or {"--help", "-h", "--refresh"} & set(argv):
        return False
    if words[0] == "session":
        return len(words) > 1 and words[1] in READING
    return words[0] in ("chat", "ps")


def apart(argv: list[str]) -> bool:
    """Whether `avatar argv` runs in a child of the server (a read of the stores), rather
    than on its event loop (`ps`, which reads the hub; `chat`, whose session is the hub's)."""
    return command_words(argv)[0] == "session"


class _Client:
    """What a command run for a client takes from it: its stdin, environment and directory."""

    def __init__(self, frame: dict[str, Any]) -> None:
        self.tty = [bool(t) for t in frame.get("tty", [False, False, False])]
        self.env = {str(k): str(v) for k, v in frame.get("env", {}).items()}
        self.names = [str(name) for name in frame.get("names") or ()]
        self.cwd = str(frame.get("cwd", "/"))
        self.stdin = NoStdin(self.tty[0])
        if frame.get("columns") and "COLUMNS" not in self.env:
            self.env["COLUMNS"] = str(frame["columns"])


async def run_for(hub: Hub, frame: dict[str, Any], peer: Peer) -> None:
    """Run the command of a `run` frame for `peer` (the server's `Runner`)."""
    argv = [str(a) for a in frame.get("argv", [])]
    if not runs_here(argv):
        peer.send({"fallback": True})
        return
    client = _Client(frame)
    if client.names:
        client.env.update(await _declared(peer, argv, client))
    if apart(argv):
        await run_apart(peer, lambda send: _in_child(hub, peer, send, argv, client))
        return
    served = _served(hub, peer, peer.send, client)
    try:
        with _as_client(served, client):
            code = _run(argv)
    except Declined as declined:
        if not (declined.whole and not client.tty[0] and not served.out.written):
            peer.send({"fallback": True})
            return
        answer = await _ask(peer, {"stdin?": True})  # (`chat -`: its prompt)
        data = str(answer.get("stdin", "")).encode("utf-8", "surrogateescape")
        client.stdin = NoStdin(False, data)
        served = _served(hub, peer, peer.send, client)
        try:
            with _as_client(served, client):
                code = _run(argv)
        except Declined:
            peer.send({"fallback": True})
            return
    if served.later is not None:
        try:
            code = await served.later()
        except Exception as e:  # the error contract, as `avatar` alone keeps it
            with _as_client(served, client):
                code = failed(e)
    peer.send({"exit": code})


def _served(hub: Hub, peer: Peer, send: Send, client: _Client) -> Served:
    return Served(hub, peer, Chunks(send, "out", client.tty[1]), Chunks(send, "err", client.tty[2]))


def _in_child(hub: Hub, peer: Peer, send: Send, argv: list[str], client: _Client) -> int:
    """A read, in the child forked for it (`avatar.server.apart`): the process is the
    client's for its whole life."""
    served = _served(hub, peer, send, client)
    try:
        with _as_client(served, client):
            return _run(argv)
    except Declined:  # (a read asks nothing of stdin; said rather than hung up on)
        send({"err": "avatar: this command needs its input: run it without the server\n"})
        return 2


async def _ask(peer: Peer, question: dict[str, Any]) -> dict[str, Any]:
    """Ask the client something during its request; its answer (`{}` if it left)."""
    peer.send(question)
    return await peer.next_frame() or {}


async def _declared(peer: Peer, argv: list[str], client: _Client) -> dict[str, str]:
    """The client's variables the providers declare (`avatar.providers.environment`), asked
    of it: of the names it listed, those the providers of its config read. Asked again with
    the answers in place while that finds more: where codex's config lives (`CODEX_HOME`, one
    of them) says which key variables its model providers name."""
    config = _option(argv, ("-c", "--config"))
    given: dict[str, str] = {}
    for _ in range(3):
        with _in_place_of(client, given):
            names, prefixes = declared_variables(Path(client.cwd), Path(config) if config else None)
        asked = [n for n in client.names if n not in given and matches(n, names, prefixes)]
        if not asked:
            break
        answer = await _ask(peer, {"env?": asked})
        got = answer.get("env")
        if not isinstance(got, dict):
            break
        given.update({str(k): str(v) for k, v in got.items() if k in asked})
    return given


def _option(argv: list[str], names: tuple[str, ...]) -> str | None:
    """The value of the global option `names` in `argv` (before the command), if given."""
    words = command_words(argv)
    head = argv[: len(argv) - len(words)]
    for i, arg in enumerate(head):
        if arg in names and i + 1 < len(head):
            return head[i + 1]
        for name in names:
            if name.startswith("--") and arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def _run(argv: list[str]) -> int:
    try:
        run(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 1
    return 0


@contextlib.contextmanager
def _as_client(served: Served, client: _Client) -> Iterator[None]:
    """The process as the client's: its streams, environment and directory (one command at a
    time: this runs on the event loop without awaiting, or in a child of its own)."""
    streams = sys.stdin, sys.stdout, sys.stderr
    token = SERVING.set(served)
    try:
        with _in_place_of(client):
            sys.stdin, sys.stdout, sys.stderr = client.stdin, served.out, served.err
            yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams
        SERVING.reset(token)


@contextlib.contextmanager
def _in_place_of(client: _Client, more: Mapping[str, str] | None = None) -> Iterator[None]:
    """The process's environment and directory as the client's (with `more` of its variables)."""
    environ, here = dict(os.environ), os.getcwd()
    try:
        os.chdir(client.cwd)
        os.environ.clear()
        os.environ.update(client.env)
        os.environ.update(more or {})
        yield
    finally:
        os.environ.clear()
        os.environ.update(environ)
        os.chdir(here)
