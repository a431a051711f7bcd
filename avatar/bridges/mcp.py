"""Config `mcp_servers` → the MCP server list of `session/new`, `load`, `resume` and `fork`.

Every ACP agent must accept stdio servers; http and sse servers are only sent to agents that
advertise them in `mcp_capabilities`, and the others are reported so the user knows. A stdio
server whose command cannot be found is reported and left out too: agents differ in how they
say so (an error in the answer text, a failed tool, or nothing at all).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from avatar.core.config import McpServer
from avatar.providers.registry import find_executable


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


def build_mcp_servers(
    servers: Mapping[str, McpServer], mcp_capabilities: Any
) -> tuple[list[Any], list[str]]:
    """The SDK objects to send, and one message per server left out (and why)."""
    from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio, SseMcpServer

    out: list[Any] = []
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
                McpServerStdio(
                    name=name,
                    command=command,
                    args=list(server.args),
                    env=[EnvVariable(name=k, value=v) for k, v in server.env.items()],
                )
            )
            continue
        supported = bool(getattr(mcp_capabilities, kind, False)) if mcp_capabilities else False
        if not server.url:
            skipped.append(f"MCP server {name!r} ({kind}) has no url")
            continue
        if not supported:
            skipped.append(
                f"MCP server {name!r} not passed: the agent does not accept {kind} servers"
            )
            continue
        headers = [HttpHeader(name=k, value=v) for k, v in server.headers.items()]
        if kind == "http":
            out.append(HttpMcpServer(name=name, url=server.url, headers=headers, type="http"))
        else:
            out.append(SseMcpServer(name=name, url=server.url, headers=headers, type="sse"))
    return out, skipped
