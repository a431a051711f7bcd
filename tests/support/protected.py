"""Protected paths (docs/design.md §10) as the door tests plant them: one project holding each kind
of path an agent may not change whatever the scope says, to check the file system afterwards."""

from __future__ import annotations

from pathlib import Path

#: Relative to the project: each refused for writes at every door unless allowed by name.
PROTECTED = (
    ".git/config",
    ".git/config.worktree",
    ".git/commondir",
    ".git/evil/config",
    ".git/hooks/pre-commit",
    ".git/info/attributes",
    ".git/modules/lib/config",
    ".git/worktrees/w/commondir",
    ".git/objects/ab/cdef",
    "vendor/lib/.git/config",
    "vendor/lib/.git/hooks/post-checkout",
    ".avatar.yaml",
    "sub/.avatar.yaml",
    ".env",
    ".env.production",
    "app/.env",
)
#: Of those, the ones refused for reading too.
SECRET_FILES = (".env", ".env.production", "app/.env")
#: What each planted file holds.
ORIGINAL = "original API_KEY=sk-protected-1234\n"


def plant(root: Path) -> None:
    """Create every protected path under `root`, holding `ORIGINAL`."""
    for rel in PROTECTED:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(ORIGINAL)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` and its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
