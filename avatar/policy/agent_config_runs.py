"""What a file of an agent's project config would run (`avatar trust --show`), read as far as
needed to say it: hooks' commands, MCP servers (command and arguments, or URL), key and
credential helpers, status lines, `notify`, tool discovery and call commands, the environment it
sets, the plugins it enables. Claude Code's and Gemini CLI's settings, `.mcp.json`, codex's and
opencode's config have known formats (JSON, JSON with comments, TOML) read here; any other file
(a command, skill or agent definition, a policy) is "may run programs".

Only the reading is here; the files and their trust are `avatar.policy.agent_config`.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: Files whose format is known, by name: JSON (with comments allowed) or TOML.
JSON_FILES = frozenset(
    {"settings.json", "settings.local.json", ".mcp.json", "opencode.json", "opencode.jsonc"}
)
TOML_FILES = frozenset({"config.toml"})

#: Keys whose value is a program to run (a string, or an argv list).
HELPERS = frozenset(
    {
        "apiKeyHelper",  # Claude Code
        "awsAuthRefresh",
        "awsCredentialExport",
        "gcpAuthRefresh",
        "otelHeadersHelper",
        "notify",  # codex
        "discoveryCommand",  # Gemini CLI (`tools.`)
        "callCommand",
        "bugCommand",
    }
)
#: Keys whose value names plugins or marketplaces: code the agent loads and runs.
PLUGINS = frozenset({"enabledPlugins", "extraKnownMarketplaces", "plugin", "plugins"})
#: Keys holding MCP servers (each entry: a command, or a URL the agent connects to).
SERVERS = frozenset({"mcpServers", "mcp_servers", "mcp"})
#: Keys holding the environment the agent sets for itself and what it runs.
ENV = frozenset({"env"})

Run = tuple[str, str]
"""Where in the file (dotted keys) and what it runs."""


def runs(path: Path, data: bytes) -> list[Run] | None:
    """What the file at `path` (its bytes `data`) would run; None when its format is unknown
    or it cannot be read as that format (it may run programs)."""
    name = path.name
    try:
        text = data.decode("utf-8")
        if name in JSON_FILES:
            parsed: Any = json.loads(_without_comments(text))
        elif name in TOML_FILES:
            import tomllib

            parsed = tomllib.loads(text)
        else:
            return None
    except (UnicodeDecodeError, ValueError):
        return None
    return list(_walk(parsed, ()))


def _walk(node: Any, where: tuple[str, ...]) -> Iterator[Run]:
    if isinstance(node, list):
        for item in node:
            yield from _walk(item, where)
        return
    if not isinstance(node, dict):
        return
    label = ".".join(where) or "command"
    command = _command(node.get("command"), node.get("args"))
    if command is not None:
        yield label, command
    elif len(where) >= 2 and where[-2] in SERVERS:
        url = node.get("url") or node.get("httpUrl") or node.get("serverUrl")
        if isinstance(url, str):
            yield label, url
    for key, value in node.items():
        if not isinstance(key, str) or key in ("command", "args"):
            continue
        here = ".".join((*where, key))
        if key in HELPERS and _command(value) is not None:
            yield here, _command(value) or ""
        elif key in PLUGINS and value:
            yield here, json.dumps(value, ensure_ascii=False)
        elif key in ENV and isinstance(value, dict):
            # A server's own environment is its configuration (keys, often), not a program.
            if command is None:
                yield from ((f"{here}.{var}", str(setting)) for var, setting in value.items())
        else:
            yield from _walk(value, (*where, key))


def _command(value: Any, args: Any = None) -> str | None:
    """A command as one line: a string is a shell command line (as written), a list an argv;
    `args` are added, quoted."""
    extra = [str(a) for a in args] if isinstance(args, list) else []
    if isinstance(value, str) and value.strip():
        return " ".join([value, *map(shlex.quote, extra)])
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return shlex.join([*value, *extra])
    return None


# `//` and `/* */` comments outside strings (Gemini CLI's settings and opencode.jsonc allow
# them), and trailing commas before `}` or `]`.
_JSONC = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/|,(\s*[}\]])', re.S)


def _without_comments(text: str) -> str:
    return _JSONC.sub(lambda m: m.group(1) or m.group(2) or "", text)
