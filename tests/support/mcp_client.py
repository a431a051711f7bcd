"""A small stdio MCP client for tests: starts a server command (`avatar mcp`), speaks
newline-delimited JSON-RPC to it, and hands back the answers.

    with McpClient(["avatar", "mcp"], env=env, cwd=cwd) as client:
        client.initialize()
        names = [t["name"] for t in client.request("tools/list")["result"]["tools"]]
        text, failed = client.call("search_sessions", {"query": "hello"})

Standard library only, so it also measures start-up (benchmarks/mcp.py).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: The protocol version the client asks for.
PROTOCOL = "2025-06-18"


class McpClient:
    """One running server and the requests sent to it (ids counted from 1)."""

    def __init__(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, timeout: float = 60
    ) -> None:
        self.proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.timeout = timeout
        self._next = 0
        #: Answers read while waiting for another (by id).
        self.early: dict[Any, dict[str, Any]] = {}

    def __enter__(self) -> McpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, message: Any) -> None:
        """Write one message (a dict, or a list for a batch), or raw bytes as they are."""
        assert self.proc.stdin is not None
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def read(self) -> Any:
        """The next message the server writes (AssertionError when it closed stdout)."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the server ended: {self.stderr()}"
        return json.loads(line)

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and wait for its answer (answers to others are kept in `early`)."""
        self._next += 1
        msg_id = self._next
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.answer(msg_id)

    def answer(self, msg_id: Any) -> dict[str, Any]:
        """The answer to request `msg_id`, read when it comes."""
        while msg_id not in self.early:
            reply = self.read()
            self.early[reply.get("id")] = reply
        return self.early.pop(msg_id)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def initialize(self, version: str = PROTOCOL) -> dict[str, Any]:
        """The handshake: `initialize`, then `notifications/initialized`; its result."""
        params = {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "avatar-tests", "version": "1"},
        }
        result = self.request("initialize", params)["result"]
        self.notify("notifications/initialized")
        return dict(result)

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> tuple[str, bool]:
        """Call a tool: the text of its result and whether it is an error."""
        reply = self.request("tools/call", {"name": tool, "arguments": arguments or {}})
        assert "result" in reply, reply
        result = reply["result"]
        return "".join(c["text"] for c in result["content"]), bool(result.get("isError"))

    def close(self) -> int:
        """Close stdin and wait for the server to end; its exit code."""
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()

    def stderr(self) -> str:
        """What the server wrote on stderr (after it ended)."""
        if self.proc.poll() is None or self.proc.stderr is None or self.proc.stderr.closed:
            return ""
        return self.proc.stderr.read().decode(errors="replace")
