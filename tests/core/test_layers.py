"""The house rules the code itself must keep (docs/design.md §1, §8): the CLI and REPL use only the
engine's public API, importing `avatar` stays cheap, and modules stay small."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

AVATAR = Path(__file__).resolve().parents[2] / "avatar"
CLI_FILES = sorted((AVATAR / "cli").rglob("*.py"))
# What the front end may import: the engine and the vocabulary it speaks in.
CLI_MAY_IMPORT = (
    "avatar.cli",
    "avatar.engine.engine",
    "avatar.engine.from_memory",  # the engine's one step before it loads (a cold one-shot's)
    "avatar.server",  # the server's hub, client and remote engine (over the engine's API)
    "avatar.events",  # the public names
    "avatar.permissions",
    "avatar.core.events",
    "avatar.core.version",
    "avatar.core.errors",
    "avatar.core.jsonrpc",  # pure: JSON-RPC lines (avatar acp speaks it as an agent)
    "avatar.core.quickjson",  # pure: JSON without json's import (avatar acp's first answer)
    "avatar.core.fileio",  # pure: one whole line appended (avatar acp's record of its sessions)
    "avatar.core.prompts",  # what `Engine.send` takes: a prompt and its images
    "avatar.policy.permissions",
    "avatar.policy.terminal_text",  # a pure function: what text may reach a terminal
    "avatar.core.diffs",  # pure: what a tool call changes (the web page shows it too)
    "avatar.core.markdown_blocks",  # pure: an answer cut into blocks (the web page's too)
    "avatar.providers.facts",
    "avatar.providers.registry",
    "avatar.providers.programs",  # where an agent's program is, its version (`avatar providers`)
    "avatar.sessions.types",
    "avatar.core.times",
    "avatar.core.quick_exit",  # the process's end (it calls CPython's own exit steps)
    "avatar.core.dataclass_code",  # start-up's: the methods `dataclasses` writes, kept
    "avatar.core.which",  # pure: `shutil.which` without shutil (where `avatar mcp` runs from)
)


def _imports(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
    return out


@pytest.mark.parametrize("path", CLI_FILES, ids=lambda p: str(p.relative_to(AVATAR / "cli")))
def test_the_cli_uses_only_the_engine_api(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    foreign = [
        m
        for m in _imports(tree)
        if m.startswith("avatar.") and not m.startswith(CLI_MAY_IMPORT) and m != "avatar"
    ]
    assert not foreign, f"{path.name} imports {foreign}: go through avatar.engine.engine.Engine"
    private = [
        f"line {node.lineno}: .{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
    ]
    assert not private, f"{path.name} reaches into private state: {private}"
    bridges = [
        f"line {node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in ("bridge", "_bridge")
    ]
    assert not bridges, f"{path.name} touches a bridge: {bridges}"


def test_importing_avatar_imports_nothing_heavy() -> None:
    code = (
        "import sys, avatar\n"
        "heavy = {m.split('.')[0] for m in sys.modules} & {'acp', 'prompt_toolkit', 'rich', "
        "'httpx', 'pydantic', 'click'}\n"
        "print(sorted(heavy))\n"
        "from avatar import Engine\n"
        "assert Engine.__name__ == 'Engine'\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_no_module_is_over_600_lines() -> None:
    """Modules are split by responsibility, never trimmed to a number: CI prints those over 400
    lines as a warning band (`.ci/run`) and this fails only past 600."""
    big = {
        str(p.relative_to(AVATAR)): n
        for p in AVATAR.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert not big, f"split these by responsibility: {big}"
