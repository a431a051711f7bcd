"""`avatar acp`'s stdio: the client's lines, read by a thread from the moment the command is
known, and `initialize` answered there, before click, the engine or asyncio load.

An editor starts its agent and asks `initialize` at once; answering it is the start-up the user
waits on (docs/startup.md; benchmarks/acp_face.py: ≤ 1.3× a stdlib agent's answer). What
avatar can do is the same whatever the config says (`hello`), so the answer needs nothing but
JSON; the rest of avatar loads after it, and the lines that come in the meantime wait in
`Stdio` until the protocol (`avatar.cli.acp.agent`) takes them (`attach`).

Stdout is the protocol's alone: `listen` keeps a copy of fd 1 for it and points fd 1 (and
`sys.stdout`) at stderr, so a stray print, or a program avatar runs that inherits fd 1, can
never put a line in the client's stream.

On the path of every `avatar acp` start: at module level it imports only `os`, `sys`,
`threading` and `avatar.core.quickjson` (JSON without `json`'s import of `re` and `enum`),
never `typing`.
"""

from __future__ import annotations

import os
import sys
import threading

from avatar.core.quickjson import dumps, loads
from avatar.core.version import __version__

TYPE_CHECKING = False  # not `typing`: see the module docstring
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO, Any

#: The ACP protocol version avatar speaks (as an agent; its client speaks the same).
PROTOCOL_VERSION = 1


def hello(params: dict[str, Any]) -> dict[str, Any]:
    """`initialize`'s answer: what avatar as an agent can do, the same for every session
    (docs/design.md §12): reopen (`session/load`) and list (`session/list`) any provider's
    session, close one, take images and embedded context in a prompt, and stdio MCP servers
    (which ACP requires of every agent); avatar asks no authentication of its own."""
    asked = params.get("protocolVersion")
    version = asked if isinstance(asked, int) and 0 < asked <= PROTOCOL_VERSION else 1
    return {
        "protocolVersion": version,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": False, "sse": False},
            "sessionCapabilities": {"list": {}, "close": {}},
        },
        "agentInfo": {"name": "avatar", "title": "avatar", "version": __version__},
        "authMethods": [],
    }


def _request(line: bytes) -> dict[str, Any] | None:
    try:
        message = loads(line.decode())
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


class Stdio:
    """The client's lines (a thread reads them) and the one writer of the protocol's."""

    def __init__(self, source: IO[bytes], out: IO[bytes]) -> None:
        self._source = source
        self._out = out
        self._lock = threading.Lock()  # one writer at a time; lines and the sink swap under it
        self._waiting: list[bytes | None] = []  # lines before `attach` (None: the end)
        self._sink: Callable[[bytes | None], None] | None = None
        #: The `initialize` params answered here, before the protocol took over (None: none).
        self.greeted: dict[str, Any] | None = None
        self.first = threading.Event()  #: set once the first line (or the end) was taken

    def start(self) -> Stdio:
        """Start reading (a daemon thread: a blocked read never holds the exit)."""
        threading.Thread(target=self._read, name="acp-stdin", daemon=True).start()
        return self

    def _read(self) -> None:
        for line in self._source:
            self._take(line)
        self._take(None)

    def _take(self, line: bytes | None) -> None:
        with self._lock:
            if self._sink is not None:
                self._sink(line)
            elif line is None or self.greeted is not None or not self._greet(line):
                self._waiting.append(line)
        self.first.set()

    def _greet(self, line: bytes) -> bool:
        """Answer `line` here when it is the first `initialize` (under the lock)."""
        message = _request(line)
        if message is None or message.get("method") != "initialize" or "id" not in message:
            return False
        params = message.get("params")
        self.greeted = params if isinstance(params, dict) else {}
        answer = {"jsonrpc": "2.0", "id": message["id"], "result": hello(self.greeted)}
        self._put(dumps(answer).encode() + b"\n")
        return True

    def attach(self, sink: Callable[[bytes | None], None]) -> None:
        """From now on every line goes to `sink` (called in the reading thread; None at the
        end of input), the lines that waited first."""
        with self._lock:
            for line in self._waiting:
                sink(line)
            self._waiting.clear()
            self._sink = sink

    def write(self, data: bytes) -> None:
        """Write whole lines to the client."""
        with self._lock:
            self._put(data)

    def _put(self, data: bytes) -> None:
        try:
            self._out.write(data)
            self._out.flush()
        except (OSError, ValueError):
            pass  # (the client is gone: its end of input ends avatar acp)


_started: Stdio | None = None


def listen() -> Stdio:
    """Start `avatar acp`'s stdio (once): fd 1 kept for the protocol alone, stdin read."""
    global _started
    if _started is None:
        sys.stdout.flush()
        out = os.fdopen(os.dup(1), "wb")
        os.dup2(2, 1)  # (what else writes to fd 1 lands on stderr)
        sys.stdout = sys.stderr
        _started = Stdio(sys.stdin.buffer, out).start()
        # The rest loads after the first line is answered: an editor sends `initialize` at
        # once, and waiting costs it nothing, where loading meanwhile would hold the GIL the
        # reading thread needs to answer (up to a switch interval, 5 ms, each time).
        _started.first.wait()
    return _started
