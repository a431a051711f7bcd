"""Claude Code's command line: the flags avatar starts `claude -p` in stream-json mode with
(`build_argv`), its permission mode, and the MCP servers it is handed (their secrets in its
environment, never on the command line). Apart from the protocol's translation
(`avatar.bridges.claude.stream`): a one-shot starts claude with this before the rest of the
bridge loads."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from avatar.bridges.mcp import server_kind, stdio_command
from avatar.core import quickjson
from avatar.core.config import McpServer, Settings

# Flags the bridge depends on; added when a configured `args:` left them out.
REQUIRED_FLAGS: tuple[tuple[str, ...], ...] = (
    ("-p",),
    ("--input-format", "stream-json"),
    ("--output-format", "stream-json"),
    ("--verbose",),
)

# avatar's permission policy → Claude Code's --permission-mode, when config names none.
# Always Claude's default: every action that changes something is asked through
# `can_use_tool`, where avatar checks its scope first (a `deny` pattern must hold for edits
# too) and then answers by its policy (`allow` answers yes itself). A mode that pre-approves
# edits (acceptEdits) would let Claude write past the scope unasked; bypassPermissions is
# refused as root and would hide what ran. Reads inside the project stay free.
PERMISSION_MODES = {"allow": "default", "deny": "default", "ask": "default"}

# Claude Code expands `${VAR}` in `--mcp-config` from its own environment. Values that may be
# secret (a server's env, http headers) travel that way instead of on the command line, where
# every local user can read them (`ps`, /proc/<pid>/cmdline).
MCP_SECRET_PREFIX = "AVATAR_MCP_"


def _mcp_secrets(servers: Mapping[str, McpServer]) -> Iterator[tuple[str, str, str, str]]:
    """(server, key, variable, value) for every env value and header, numbered in order."""

    for i, (name, server) in enumerate(servers.items()):
        items = server.env if server_kind(server) == "stdio" else server.headers
        for j, (key, value) in enumerate(items.items()):
            yield name, key, f"{MCP_SECRET_PREFIX}{i}_{j}", value


def mcp_env(servers: Mapping[str, McpServer]) -> dict[str, str]:
    """The environment Claude Code needs to expand the references in `mcp_config`."""
    return {var: value for _, _, var, value in _mcp_secrets(servers)}


def mcp_config(servers: Mapping[str, McpServer]) -> str | None:
    """The `--mcp-config` JSON for config `mcp_servers` (None when there are none).

    Env values and headers are `${AVATAR_MCP_<i>_<j>}` references (see `mcp_env`); a stdio
    command is made absolute as for ACP agents when it can be found.
    """

    refs: dict[str, dict[str, str]] = {}
    for name, key, var, _ in _mcp_secrets(servers):
        refs.setdefault(name, {})[key] = "${" + var + "}"
    out: dict[str, dict[str, Any]] = {}
    for name, server in servers.items():
        kind = server_kind(server)
        if kind == "stdio":
            if server.command:
                out[name] = {
                    "type": "stdio",
                    "command": stdio_command(server) or server.command,
                    "args": list(server.args),
                    "env": refs.get(name, {}),
                }
        elif server.url:
            out[name] = {"type": kind, "url": server.url, "headers": refs.get(name, {})}
    return quickjson.dumps({"mcpServers": out}) if out else None


def permission_mode(settings: Settings, provider: str) -> str:
    """Config `providers.<name>.permission_mode`, else the mode for avatar's policy."""
    cfg = settings.provider_config(provider)
    if cfg is not None and cfg.permission_mode:
        return cfg.permission_mode
    return PERMISSION_MODES.get(settings.permission, "default")


def build_argv(
    command: tuple[str, ...],
    executable: str,
    *,
    settings: Settings,
    provider: str,
    model: str | None,
    system_prompt: str | None,
    add_dirs: list[str],
    session_args: list[str],
    held_back: Sequence[str] = (),
) -> list[str]:
    """The full command line: configured command, required flags, then avatar's own options
    (`held_back`: the flags that start claude without the project's config it may not use)."""
    argv = [executable, *command[1:]]
    for flag in REQUIRED_FLAGS:
        if flag[0] not in argv:
            argv.extend(flag)
    argv += ["--include-partial-messages", "--permission-prompt-tool", "stdio"]
    if "--permission-mode" not in argv and "--dangerously-skip-permissions" not in argv:
        argv += ["--permission-mode", permission_mode(settings, provider)]
    if model:
        argv += ["--model", model]
    if system_prompt:
        argv += ["--append-system-prompt", system_prompt]
    for d in add_dirs:
        argv += ["--add-dir", d]
    servers = mcp_config(settings.mcp_servers)
    if servers:
        argv += ["--mcp-config", servers]
    return argv + list(held_back) + session_args
