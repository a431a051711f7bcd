"""What an agent was refused outside its walls, said in its error (docs/design.md §10).

An agent that may not write where it keeps its state rarely says so clearly: it exits during
`initialize`, or answers "Internal error: Cannot call write after a stream was destroyed", and
the cause is only in its stderr (`EACCES: permission denied, mkdir '/home/u/.agent'`). When an
error of an agent inside the walls, or its stderr, names a permission error on a path its walls
do not open for writing — and avatar, outside them, could write there — the error says which
path, and the key that opens it (`providers.NAME.state_dirs`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from avatar.policy.sandbox import Sandbox

#: How programs say the OS refused them (Node, Python, Go, Rust, coreutils).
_REFUSED = re.compile(
    r"EACCES|EROFS|EPERM|permission denied|read-only file system|operation not permitted"
    r"|os error (?:1|13|30)\b|errno (?:1|13|30)\b",
    re.IGNORECASE,
)
#: An absolute path: quoted (', ", `) or bare.
_PATH = re.compile(
    r"""'(/[^'\n]*)'|"(/[^"\n]*)"|`(/[^`\n]*)`|(?<![\w.~/-])(/[^\s'"`,;:()\[\]{}]+)"""
)
#: Not the walls' doing, nor a state dir's place.
_SYSTEM = (Path("/proc"), Path("/sys"))


def refused(texts: Iterable[str | None], walls: Sandbox) -> Path | None:
    """The path a permission error in `texts` names that `walls` do not open for writing and
    that avatar itself could write (so the walls refused it), else None; in each text, the
    last such line is the one nearest the failure."""
    for text in texts:
        for line in reversed((text or "").splitlines()):
            if not _REFUSED.search(line):
                continue
            for match in _PATH.finditer(line):
                path = Path(next(g for g in match.groups() if g is not None))
                if _outside(path, walls):
                    return path
    return None


def _outside(path: Path, walls: Sandbox) -> bool:
    if any(path.is_relative_to(s) for s in _SYSTEM) or walls.lets_write(path):
        return False
    nearest = path
    while not nearest.exists() and nearest.parent != nearest:
        nearest = nearest.parent
    return os.access(nearest, os.W_OK)


def explained(name: str, message: str, stderr: str | None, walls: Sandbox | None) -> str:
    """`message` (an agent's failure), with the path its walls refused and the key that opens
    it when its words or its stderr name one (see the module docstring)."""
    if walls is None:
        return message
    path = refused((message, stderr), walls)
    if path is None:
        return message
    return (
        f"{message}; {name} may not write {path}: it is outside its walls "
        f"(add it to providers.{name}.state_dirs)"
    )
