"""What a tool call did, whichever agent made it: the files it read or changed, the command it
ran, the plan it kept. Tool names and argument keys differ per agent (native `write`/`path`,
Claude Code `Write`/`file_path`, Gemini `write_file`/`file_path`, Codex `apply_patch` with a
patch text), so they are matched by small tables, case-insensitively."""

from __future__ import annotations

import re
from typing import Any

_CHANGE = {
    "write",
    "edit",
    "multiedit",
    "write_file",
    "replace",
    "edit_file",
    "create_file",
    "apply_patch",
    "notebookedit",
    "str_replace_editor",
}
_READ = {"read", "read_file", "read_many_files", "view", "cat", "open_file"}
_COMMAND = {"bash", "shell", "run_shell_command", "exec_command", "execute", "local_shell"}
_PLAN = {"todowrite", "write_todos", "update_plan", "todo_write"}
_PATH_KEYS = ("path", "file_path", "filePath", "absolute_path", "notebook_path", "filename")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)
# Tool titles as ACP agents and avatar's own copy show them: "Write a.py", "Edit src/x.py".
_TITLE = re.compile(r"^(write|edit|create|read|delete)\s+`?([^\s`]+)`?", re.I)


def _name(name: str) -> str:
    return name.rsplit("__", 1)[-1].lower()  # mcp__server__tool → tool


def _paths(args: Any) -> list[str]:
    if isinstance(args, str):
        return _PATCH_FILE.findall(args)
    if not isinstance(args, dict):
        return []
    found = [str(args[k]) for k in _PATH_KEYS if isinstance(args.get(k), str) and args[k]]
    for key in ("paths", "file_paths"):
        if isinstance(args.get(key), list):
            found += [str(p) for p in args[key] if isinstance(p, str)]
    for key in ("input", "patch"):
        if isinstance(args.get(key), str):
            found += _PATCH_FILE.findall(args[key])
    return found


def changed_files(name: str, args: Any) -> list[str]:
    """Files a call to tool `name` with `args` wrote or edited."""
    if _name(name) in _CHANGE:
        return _paths(args)
    match = _TITLE.match(name)  # a title ("Write a.py"): what ACP agents and the copy show
    if match and match.group(1).lower() != "read":
        return _paths(args) or [match.group(2)]
    return []


def read_files(name: str, args: Any) -> list[str]:
    """Files a call to tool `name` with `args` read."""
    if _name(name) in _READ:
        return _paths(args)
    match = _TITLE.match(name)
    if match and match.group(1).lower() == "read":
        return _paths(args) or [match.group(2)]
    return []


def command(name: str, args: Any) -> str | None:
    """The shell command a call ran, if it is a shell tool."""
    if _name(name) not in _COMMAND or not isinstance(args, dict):
        return None
    cmd = args.get("command", args.get("cmd"))
    if isinstance(cmd, list):
        cmd = " ".join(str(c) for c in cmd)
    return str(cmd) if cmd else None


def plan(name: str, args: Any) -> list[tuple[str, str]] | None:
    """`[(status, step)]` when the call set the agent's plan or todo list."""
    if _name(name) not in _PLAN or not isinstance(args, dict):
        return None
    items = args.get("todos", args.get("plan"))
    if not isinstance(items, list):
        return None
    steps = []
    for item in items:
        if isinstance(item, dict):
            text = item.get("content") or item.get("step") or item.get("description")
            if text:
                steps.append((str(item.get("status", "pending")), str(text)))
    return steps
