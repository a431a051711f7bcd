"""A tiny stdio MCP server for tests: one tool, `stamp`, that records what it was called with.

Speaks newline-delimited JSON-RPC 2.0 on stdin/stdout (the MCP stdio transport), standard
library only, so every agent CLI can start it as ``<python> tests/support/mcp_server.py LOG``:

- ``initialize`` → the client's ``protocolVersion``, ``capabilities {tools: {}}``, ``serverInfo``;
- ``notifications/initialized`` (and any other notification) → nothing;
- ``tools/list`` → the one tool ``stamp {text: string}``;
- ``tools/call stamp`` → appends ``text`` as one line to the log file and answers
  ``stamped: <text> #<TOKEN>`` (a fixed marker a test can look for in the model request);
- ``ping`` → ``{}``; any other method → error -32601.

The log file is the first argument, else ``$STAMP_LOG``; without either the call still answers.
Every request is also appended to ``<log>.rpc`` (method names only) to debug a handshake.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

#: Appended to every tool answer: proof that the text the model sees came from this server.
TOKEN = "mcp-stamp-7f3a"
TOOL_NAME = "stamp"
SERVER_NAME = "avatar-test-stamp"
#: Used when the client sends no protocol version.
DEFAULT_PROTOCOL = "2025-06-18"

TOOL = {
    "name": TOOL_NAME,
    "description": "Stamp a text: records it and answers with a confirmation.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to stamp."}},
        "required": ["text"],
    },
}


#: This file: run it as ``[sys.executable, str(SCRIPT)]``.
SCRIPT = Path(__file__).resolve()


def command(log: Path | str | None = None) -> list[str]:
    """The argv that starts this server (with ``log`` as its log file, else ``$STAMP_LOG``)."""
    return [sys.executable, str(SCRIPT), *([str(log)] if log is not None else [])]


def tool_answer(text: str) -> str:
    """What a `stamp` call with ``text`` answers (tests compare against it)."""
    return f"stamped: {text} #{TOKEN}"


def _log_path(argv: list[str]) -> Path | None:
    name = argv[1] if len(argv) > 1 else os.environ.get("STAMP_LOG")
    return Path(name) if name else None


def _append(path: Path | None, line: str) -> None:
    if path is None:
        return
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def handle(message: dict[str, Any], log: Path | None) -> dict[str, Any] | None:
    """The response to one JSON-RPC message (None for notifications)."""
    method = message.get("method")
    msg_id = message.get("id")
    if log is not None:
        _append(log.with_name(log.name + ".rpc"), str(method))
    if msg_id is None:
        return None  # a notification (notifications/initialized, cancelled, …)
    params = message.get("params") or {}
    result: dict[str, Any]
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion") or DEFAULT_PROTOCOL,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": SERVER_NAME, "version": "1.0.0"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        if params.get("name") != TOOL_NAME:
            return _error(msg_id, -32602, f"unknown tool: {params.get('name')}")
        text = str((params.get("arguments") or {}).get("text", ""))
        _append(log, text)
        result = {"content": [{"type": "text", "text": tool_answer(text)}], "isError": False}
    else:
        return _error(msg_id, -32601, f"method not found: {method}")
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


def _error(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def main(argv: list[str]) -> int:
    """Serve stdin until it closes."""
    log = _log_path(argv)
    for raw in sys.stdin:
        line = raw.strip()
        if not line:
            continue
        try:
            message = json.loads(line)
        except ValueError:
            reply: dict[str, Any] | None = _error(None, -32700, "parse error")
        else:
            if not isinstance(message, dict):
                reply = _error(None, -32600, "invalid request")
            else:
                reply = handle(message, log)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
