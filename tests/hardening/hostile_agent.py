"""A hostile ACP agent: raw JSON-RPC on stdio that answers just well enough to hold a session,
and sends junk before each prompt's answer.

`HOSTILE_JUNK_FILE` (env) names a file holding a JSON list of base64 strings; each decodes
to bytes written to stdout as they are (a newline is added when missing) before the prompt's
real answer — unknown
update kinds, huge lines, invalid UTF-8, replies to requests never sent, notifications for
other sessions, anything. The real answer is one `agent_message_chunk` "ok" and `end_turn`.
`HOSTILE_SESSION_ID` sets the session id it hands out (default `hostile-1`), e.g. a path.
"""

from __future__ import annotations

import base64
import json
import os
import sys


def send(message: dict[str, object]) -> None:
    sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
    sys.stdout.buffer.flush()


def junk() -> None:
    name = os.environ.get("HOSTILE_JUNK_FILE")
    items = json.loads(open(name).read()) if name else []  # noqa: SIM115 (tiny, read once)
    for item in items:
        data = base64.b64decode(item)
        sys.stdout.buffer.write(data if data.endswith(b"\n") else data + b"\n")
    sys.stdout.buffer.flush()


def main() -> None:
    sid = os.environ.get("HOSTILE_SESSION_ID", "hostile-1")
    for raw in sys.stdin.buffer:
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        method, rid = msg.get("method"), msg.get("id")
        if rid is None:
            continue  # notifications (session/cancel) need no answer
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1}})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": sid}})
        elif method == "session/prompt":
            junk()
            update = {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "ok"},
            }
            params = {"sessionId": sid, "update": update}
            send({"jsonrpc": "2.0", "method": "session/update", "params": params})
            send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
        else:
            error = {"code": -32601, "message": f"method not found: {method}"}
            send({"jsonrpc": "2.0", "id": rid, "error": error})


if __name__ == "__main__":
    main()
