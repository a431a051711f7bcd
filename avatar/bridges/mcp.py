"""Config `mcp_servers` → the MCP server list of `session/new`, `load`, `resume` and `fork`.

Every ACP agent must accept stdio servers; http and sse servers are only sent to agents that
advertise them in `mcp_capabilities`, and the others are reported so the user knows. A stdio
server whose command cannot be found is reported and left out too: agents differ in how they
say so (an error in the answer text, a failed tool, or nothing at all).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from avatar.providers.programs import find_executable

if TYPE_CHECKING:
    from avatar.core.config import McpServer


def server_kind(server: McpServer) -> str:
    """`stdio`, `http` or `sse`: the explicit `type`, else by whether a url is given."""
    if server.type:
        return server.type
    return "http" if server.url and not server.command else "stdio"


def stdio_command(server: McpServer) -> str | None:
    """The absolute path of a stdio server's command, found the way avatar finds agents
    (PATH, then the checkout's bridges); a relative path is taken from the working directory.
    None when there is no such executable."""
    if not server.command:
        return None
    found = find_executable(server.command)
    return os.path.abspath(found) if found else None


def _pairs(values: Mapping[str, str]) -> list[dict[str, str]]:
    """An env or headers mapping as ACP sends it: `[{"name", "value"}]`."""
    return [{"name": k, "value": v} for k, v in values.items()]


def build_mcp_servers(
    servers: Mapping[str, McpServer], mcp_capabilities: Any
) -> tuple[list[dict[str, Any]], list[str]]:
    """The servers to send, as ACP's JSON (`mcpCapabilities` as the agent wrote it says
    which kinds it takes), and one message per server left out (and why)."""
    out: list[dict[str, Any]] = []
    skipped: list[str] = []
    for name, server in servers.items():
        kind = server_kind(server)
        if kind == "stdio":
            if not server.command:
                skipped.append(f"MCP server {name!r} has no command")
                continue
            # The protocol wants an absolute path; resolve a bare name the way a shell would.
            command = stdio_command(server)
            if command is None:
                skipped.append(
                    f"MCP server {name!r} not passed: command {server.command!r} not found"
                )
                continue
            out.append(
                {
                    "name": name,
                    "command": command,
                    "args": list(server.args),
                    "env": _pairs(server.env),
                }
            )
            continue
        offered = mcp_capabilities if isinstance(mcp_capabilities, Mapping) else {}
        supported = bool(offered.get(kind))
        if not server.url:
            skipped.append(f"MCP server {name!r} ({kind}) has no url")
            continue
        if not supported:
            skipped.append(
                f"MCP server {name!r} not passed: the agent does not accept {kind} servers"
            )
            continue
        headers = _pairs(server.headers)
        out.append({"name": name, "url": server.url, "headers": headers, "type": kind})
    return out, skipped
