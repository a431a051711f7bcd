"""Where the server listens and what travels on its socket (stdlib only: every client loads it).

The socket is `$XDG_RUNTIME_DIR/avatar/server.sock`, else `/tmp/avatar-<uid>/server.sock`: a
directory of the user's, 0700, and the socket in it 0600. A directory found there that is not
the user's own, or open to others, is refused (someone else could listen in its place).

Frames are JSON objects, one per line (UTF-8; a newline inside a string is escaped, so a line
ends a frame whatever it holds), of any size: both ends read a line whole however long it is
(`avatar.server.peer.read_frame`, `avatar.server.client.Connection`), so a megabyte prompt or
a conversation's history travels as one frame. A line that is not a JSON object is answered
with an error frame saying so (`ProtocolError`), never a silent hang-up. A client opens with a
request naming its `op`:

- `{"op": "run", "argv": [...], "cwd": ..., "env": {...}, "names": [...], "tty": [in, out,
  err], "columns": N}`: run an `avatar` command in the server as this process would have.
  `env` holds the variables always carried, `names` the names of the client's other
  variables (`avatar.server.environment`). The server may first ask `{"env?": [names]}` (the
  variables of those the providers declare: the client answers `{"env": {...}}`) and, for a
  command that reads its stdin whole (`chat -`), `{"stdin?": true}` (the client answers
  `{"stdin": text}`, all of it). It answers with `{"out": text}` / `{"err": text}` chunks and
  ends with `{"exit": code}` (and `"error"`: a one-line reason, when the server failed), or at
  once `{"fallback": true}`: the command is not one it runs, the client runs it itself (with
  `"notice"`: why, for the client to say).
  While it runs the client may send `{"op": "cancel"}` (Ctrl-C);
- `{"op": "ps"}`: `{"live": [LiveInfo dict, ...]}`;
- `{"op": "attach", "ref": id, "client": name}`: `{"ok": {...LiveInfo}}` or `{"error": ...}`,
  then `{"event": {...}}` frames (the hub's, `avatar.server.hub`); the client sends
  `{"op": "prompt", "text": ...}`, `{"op": "answer", "id": ..., "answer": ...}` or
  `{"op": "cancel"}` at any time;
- `{"op": "host", "client": "repl:<pid>", "since": t, "info": {...}, "started": {...},
  "running": turn_started event | null}`: a REPL lists the session it runs in its own
  process (`avatar.server.hosted`; `info`: the `LiveInfo` fields it knows: provider,
  session_id, project, state, model, tokens, queued). No answer; the REPL then sends
  `{"event": {...}}` (the engine's events and the hub's `turn_started`, `turn_ended`,
  `permission_asked`, `permission_answered`), `{"info": {...}}` when a figure changes, and
  `{"history": [...], "id": n}` when asked; the server sends `{"op": "prompt", "text": ...,
  "client": ...}`, `{"op": "answer", "id": ..., "answer": ..., "client": ...}`,
  `{"op": "cancel"}` and `{"op": "history", "id": n}` (the conversation so far, for a client
  joining). The server closing the connection ends the listing, not the REPL;
- `{"op": "stop"}`: `{"ok": pid}`, then the server ends (with every agent it started).

An error is `{"error": message, "exit": code}`. A client inside avatar's walls gets one to any
request but `run` (and `{"fallback": true, "notice": ...}` to that), then the connection ends.
"""

from __future__ import annotations

import os

from avatar.core.quickjson import DecodeError, dumps, loads
from avatar.core.runtime import socket_dir

# Not `typing` (nor pathlib, socket or signal, whose enums cost more than the rest of a
# client's start): every command through the server loads this module.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SOCKET_NAME = "server.sock"


def socket_path(env: dict[str, str] | None = None) -> str:
    """The user's server socket."""
    return os.path.join(socket_dir(env), SOCKET_NAME)


def encode(frame: dict[str, Any]) -> bytes:
    """One frame as the line that carries it."""
    return dumps(frame).encode("utf-8", "surrogateescape") + b"\n"


class ProtocolError(ValueError):
    """A line that is not a frame; its message says why, in one line."""


def decode(line: bytes, what: str = "a request") -> dict[str, Any]:
    """The frame a line carries; a ProtocolError saying why when it is not a JSON object
    (`what`: what the line was, for the message)."""
    try:
        frame = loads(line.decode("utf-8", "surrogateescape"))
    except DecodeError as e:
        raise ProtocolError(f"{what} that is not JSON: {e}") from None
    if not isinstance(frame, dict):
        raise ProtocolError(f"{what} that is not a JSON object")
    return frame
