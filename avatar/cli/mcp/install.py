"""`avatar mcp --install claude|codex|gemini`: the `avatar` entry in that agent's user config,
so every session of it can call the library's tools (docs/design.md §12).

- Claude Code: `mcpServers.avatar` in `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json`),
  the user scope `claude mcp add --scope user` writes;
- codex: the table `[mcp_servers.avatar]` in `$CODEX_HOME/config.toml` (`~/.codex/`);
- Gemini CLI: `mcpServers.avatar` in `~/.gemini/settings.json` (`$GEMINI_CLI_HOME/.gemini/`).

The entry runs this `avatar` by its absolute path with `mcp` and the flags given with
`--install` (`--allow-prompt`, `--permission`), and carries the variables that tell avatar and
the agents where their data is, when they are set here (`AVATAR_HOME`, `AVATAR_CONFIG` and
the variables the provider data's `state_dirs` name: `CODEX_HOME`, …): codex starts an MCP
server with a few variables only, and the server must read the library this shell sees.

What will be written is shown first, then asked (y/N at a terminal; `--yes` for scripts). The
edit is idempotent (the same entry again changes nothing), replaces only the `avatar` entry
(every other key and server stays as it was: the result is read back and compared before it
is written), and writes through a temporary file renamed over the real one (a symlinked
config is written where the link points). A file avatar cannot read as JSON or TOML is left
alone, with one line saying so.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.core.errors import UsageError
from avatar.core.which import which

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

#: The entry's name in each agent's config.
NAME = "avatar"
#: Seconds codex waits for a tool call with `--allow-prompt` (another agent's turn takes
#: minutes; codex's own default is 60 s).
PROMPT_TIMEOUT = 900
_WHERE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Plan:
    """What `--install` will do: the file, its text now (None: no file) and after."""

    agent: str
    path: Path
    before: str | None
    after: str
    shown: str  # the entry as it will be written
    replaced: str | None  # the entry it replaces, as it was

    @property
    def changes(self) -> bool:
        """False when the file already holds exactly this entry."""
        return self.before != self.after

    def question(self) -> str:
        """What is shown before asking: the file and exactly what goes in it."""
        verb = "replace the avatar entry" if self.replaced is not None else "add"
        out = [f"{self.agent}'s user config {self.path}: {verb}", "", self.shown.rstrip(), ""]
        if self.replaced is not None:
            out += ["(it is now:)", self.replaced.rstrip(), ""]
        return "\n".join(out)

    def write(self) -> None:
        """Write the file (through a temporary one renamed over it, its mode kept)."""
        real = Path(os.path.realpath(self.path))
        real.parent.mkdir(parents=True, exist_ok=True)
        mode = real.stat().st_mode & 0o777 if real.exists() else 0o600
        temporary = real.with_name(f".{real.name}.avatar-{os.getpid()}")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(self.after)
            os.replace(temporary, real)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise


def command_line() -> list[str]:
    """How this `avatar` is started from anywhere: its absolute path (else `python -m avatar`)."""
    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) == "avatar" and os.access(argv0, os.X_OK):
        return [os.path.abspath(argv0)]
    found = which("avatar")
    if found:
        return [os.path.abspath(found)]
    return [sys.executable, "-m", "avatar"]


def locating(env: Mapping[str, str], state_dirs: Sequence[str]) -> dict[str, str]:
    """The variables set in `env` that say where avatar's data and the agents' are:
    AVATAR_HOME, AVATAR_CONFIG, and those the agents' `state_dirs` name."""
    names = ["AVATAR_HOME", "AVATAR_CONFIG"]
    names += sorted({m for entry in state_dirs for m in _WHERE.findall(entry)} - {"HOME"})
    return {n: env[n] for n in names if env.get(n)}


def config_path(agent: str, env: Mapping[str, str]) -> Path:
    """The user config file of `agent` that holds its MCP servers."""
    home = Path(env.get("HOME") or Path.home())
    if agent == "claude":
        base = env.get("CLAUDE_CONFIG_DIR")
        return Path(base) / ".claude.json" if base else home / ".claude.json"
    if agent == "codex":
        return Path(env.get("CODEX_HOME") or home / ".codex") / "config.toml"
    if agent == "gemini":
        return Path(env.get("GEMINI_CLI_HOME") or home) / ".gemini" / "settings.json"
    raise UsageError(f"--install: not an agent avatar installs into: {agent}")


def plan(agent: str, path: Path, argv: list[str], env: dict[str, str], prompts: bool) -> Plan:
    """What installing `argv` (with `env`) into `agent`'s config at `path` changes."""
    try:
        before = path.read_text(encoding="utf-8") if path.exists() else None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read {path}: {e}") from None
    if agent == "codex":
        return _toml_plan(path, before, argv, env, prompts)
    entry: dict[str, Any] = {"command": argv[0], "args": argv[1:]}
    if agent == "claude":
        entry = {"type": "stdio", **entry}
    if env:
        entry["env"] = env
    return _json_plan(agent, path, before, entry)


def _json_plan(agent: str, path: Path, before: str | None, entry: dict[str, Any]) -> Plan:
    try:
        data = json.loads(before) if before and before.strip() else {}
    except ValueError as e:
        raise UsageError(
            f"{path} is not JSON avatar can edit ({e}): add the entry by hand"
        ) from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(servers, dict | None):
        raise UsageError(f"{path} has no mcpServers object avatar can edit: add the entry by hand")
    old = (servers or {}).get(NAME)
    shown = json.dumps({"mcpServers": {NAME: entry}}, indent=2)
    if old == entry:
        return Plan(agent, path, before, before or "", shown, None)
    data["mcpServers"] = {**(servers or {}), NAME: entry}
    after = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    replaced = json.dumps({"mcpServers": {NAME: old}}, indent=2) if old is not None else None
    return Plan(agent, path, before, after, shown, replaced)


# `[mcp_servers.avatar]` and its sub-tables (`[mcp_servers.avatar.env]`), quoted or not.
_OURS = re.compile(
    r"^[ \t]*\[[ \t]*mcp_servers[ \t]*\.[ \t]*(?:avatar|\"avatar\"|'avatar')"
    r"[ \t]*(?:\.[^\]\n]*)?\][ \t]*(?:#.*)?$"
)
_TABLE = re.compile(r"^[ \t]*\[")


def _toml(value: object) -> str:
    # (JSON's strings are TOML basic strings; not ASCII-escaped: TOML has no surrogate pairs)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _toml_plan(
    path: Path, before: str | None, argv: list[str], env: dict[str, str], prompts: bool
) -> Plan:
    entry: dict[str, Any] = {"command": argv[0], "args": argv[1:]}
    if env:
        entry["env"] = env
    if prompts:
        entry["tool_timeout_sec"] = PROMPT_TIMEOUT
    block = f"[mcp_servers.{NAME}]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in entry.items())
    try:
        data = tomllib.loads(before or "")
    except tomllib.TOMLDecodeError as e:
        raise UsageError(
            f"{path} is not TOML avatar can edit ({e}): add the entry by hand"
        ) from None
    servers = data.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise UsageError(f"{path}: mcp_servers is not a table: add the entry by hand")
    old = servers.get(NAME)
    if old == entry:
        return Plan("codex", path, before, before or "", block, None)
    lines, ours = (before or "").splitlines(keepends=True), False
    kept: list[str] = []
    replaced: list[str] = []
    for line in lines:
        if _OURS.match(line):
            ours = True
        elif _TABLE.match(line):
            ours = False
        (replaced if ours else kept).append(line)
    text = "".join(kept).rstrip("\n")
    after = (text + "\n\n" if text else "") + block
    # Read back: only the avatar entry differs, or the file is left to the user.
    wanted = {**data, "mcp_servers": {**servers, NAME: entry}}
    try:
        same = tomllib.loads(after) == wanted
    except tomllib.TOMLDecodeError:
        same = False
    if not same:
        raise UsageError(
            f"{path} defines mcp_servers.{NAME} in a way avatar does not edit: "
            f"make it a [mcp_servers.{NAME}] table, or add the entry by hand"
        )
    shown_old = "".join(replaced) if old is not None else None
    return Plan("codex", path, before, after, block, shown_old)
