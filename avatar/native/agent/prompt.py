"""The native agent's system prompt (docs/design.md §5).

Working directory, each tool's description, project instructions (`AGENTS.md`, else
`CLAUDE.md`, in every directory from the filesystem root down to the cwd — nearest last, so
it has the final word), then additions from presets and extensions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from avatar.native.tools.base import AgentTool

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
MAX_INSTRUCTION_BYTES = 64 * 1024

BASE = """You are a coding agent working in a user's project through a terminal. Use the tools \
to inspect and change files and to run commands; read before you edit, keep changes minimal \
and focused, and verify them (run the tests or the program) when you can. Paths are relative \
to the working directory. Answer concisely; show file paths and commands rather than long \
explanations."""


def find_instructions(cwd: Path) -> list[Path]:
    """Project instruction files from the root down to `cwd` (one per directory)."""
    found: list[Path] = []
    for directory in (cwd, *cwd.parents):
        for name in INSTRUCTION_FILES:
            candidate = directory / name
            if candidate.is_file():
                found.append(candidate)
                break  # AGENTS.md wins; CLAUDE.md is often a copy or a symlink of it
    found.reverse()
    return found


def build_system_prompt(
    cwd: Path,
    tools: Sequence[AgentTool],
    additions: Iterable[str] = (),
) -> str:
    """The full system prompt for a session in `cwd`."""
    parts = [BASE, f"Working directory: {cwd}"]
    lines = ["Tools:"]
    for tool in tools:
        lines.append(f"- {tool.name}: {tool.description}")
    parts.append("\n".join(lines))
    for path in find_instructions(cwd):
        try:
            text = path.read_bytes()[:MAX_INSTRUCTION_BYTES].decode("utf-8", errors="replace")
        except OSError:
            continue
        if text.strip():
            parts.append(f"Project instructions from {path}:\n\n{text.strip()}")
    for extra in additions:
        if extra and extra.strip():
            parts.append(extra.strip())
    return "\n\n".join(parts)
