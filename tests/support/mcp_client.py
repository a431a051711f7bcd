"""A small stdio MCP client for tests: starts a server command (`avatar mcp`), speaks
newline-delimited JSON-RPC to it, and hands back the answers.

    with McpClient(["avatar", "mcp"], env=env, cwd=cwd) as client:
        client.initialize()
        names = [t["name"] for t in client.request("tools/list")["result"]["tools"]]
        text, failed = client.call("search_sessions", {"query": "hello"})

Standard library only, so it also measures start-up (benchmarks/mcp.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.support.stdio_peer import StdioPeer

#: The protocol version the client asks for.
PROTOCOL = "2025-06-18"


class McpClient(StdioPeer):
    """One running server and the requests sent to it (ids counted from 1)."""

    def __init__(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, timeout: float = 60
    ) -> None:
        super().__init__(argv, env=env, cwd=cwd, timeout=timeout)
        #: Answers read while waiting for another (by id).
        self.early: dict[Any, dict[str, Any]] = {}

    def __enter__(self) -> McpClient:
        return self

    def read(self) -> Any:
        """The next message the server writes (AssertionError when it closed stdout)."""
        return self.read_line()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and wait for its answer (answers to others are kept in `early`)."""
        return self.answer(self.start(method, params))

    def answer(self, msg_id: Any) -> dict[str, Any]:
        """The answer to request `msg_id`, read when it comes."""
        while msg_id not in self.early:
            reply = self.read()
            self.early[reply.get("id")] = reply
        return self.early.pop(msg_id)

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
