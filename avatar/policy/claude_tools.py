"""What Claude Code's tool calls touch, and the scope's answer to its permission questions (and
to any permission request that names paths and a command)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from avatar.policy.denied import ScopeDenied
from avatar.policy.scope import Mode, ScopePolicy

_CLAUDE_PATHS: dict[str, tuple[str, Mode]] = {
    **dict.fromkeys(["Read", "NotebookRead"], ("file_path", "read")),
    **dict.fromkeys(["Write", "Edit", "MultiEdit"], ("file_path", "write")),
    **dict.fromkeys(["Grep", "Glob", "LS"], ("path", "read")),
    "NotebookEdit": ("notebook_path", "write"),
}
_CLAUDE_SEARCHES = frozenset({"Grep", "Glob", "LS"})


def claude_tool_paths(tool_name: str, tool_input: Any) -> list[tuple[str, Mode]]:
    """The paths a Claude Code tool call touches and how (a search without `path` reads the
    project root); empty for tools that name no path."""
    spec = _CLAUDE_PATHS.get(tool_name)
    if spec is None:
        return []
    key, mode = spec
    value = tool_input.get(key) if isinstance(tool_input, Mapping) else None
    if isinstance(value, str) and value.strip():
        return [(value, mode)]
    return [(".", mode)] if tool_name in _CLAUDE_SEARCHES else []


def refusal(
    policy: ScopePolicy,
    paths: Iterable[tuple[str, Mode]],
    command: str | Sequence[str] | None = None,
) -> str | None:
    """Why the scope refuses an action that touches `paths` (each with how) and runs `command`
    (a shell line, or an argv run without a shell), or None when it allows it. Every door that
    answers a permission request asks this first; the permission policy decides after it."""
    try:
        if isinstance(command, str):
            policy.check_command(command)
        elif command is not None:
            policy.check_argv(command)
        for path, mode in paths:
            policy.check(path, mode)
    except ScopeDenied as e:
        return str(e)
    return None


def check_tool_request(policy: ScopePolicy, tool_name: str, tool_input: Any) -> str | None:
    """Why the scope refuses Claude Code's `tool_name` call with `tool_input`, or None when it
    allows it (the permission policy still decides after this)."""
    command = None
    if tool_name == "Bash" and isinstance(tool_input, Mapping):
        given = tool_input.get("command")
        command = given if isinstance(given, str) else None
    return refusal(policy, claude_tool_paths(tool_name, tool_input), command)
