"""Protected paths (DESIGN §10): refused at every door and by the sandbox, whatever the scope
says, unless the user names one in `scope.allow_protected`.

They are the files through which a write becomes code that runs later, or a read reveals a
secret:

- avatar's own config: `.avatar.yaml` at any depth (a project's config, or a subproject's)
  and the user config file — an agent that rewrites them chooses what the next `avatar` runs;
- git's: the project's `.git/config`, `.git/config.worktree`, `.git/hooks/`, `.git/modules/`
  and `.git/worktrees/` (configs and hooks run code on the user's next `git status`), a `.git`
  *file* (it names the git directory to use), and any nested `.git` below the root;
- `.env` and `.env.*` at any depth: read too, since they hold secrets.

Everything else under `.git` (objects, refs, the index) stays writable, so an agent can
commit. Patterns are scope patterns (`avatar.policy.scope`), matched against root-relative paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from avatar.policy.patterns import pattern_matches

Mode = Literal["read", "write"]

#: (scope pattern, the modes it protects). Order: the first match names the reason.
PROTECTED: tuple[tuple[str, frozenset[Mode]], ...] = (
    (".env", frozenset({"read", "write"})),
    (".env.*", frozenset({"read", "write"})),
    (".avatar.yaml", frozenset({"write"})),
    ("/.git/config", frozenset({"write"})),
    ("/.git/config.worktree", frozenset({"write"})),
    ("/.git/hooks", frozenset({"write"})),
    ("/.git/modules", frozenset({"write"})),
    ("/.git/worktrees", frozenset({"write"})),
    ("*/**/.git", frozenset({"write"})),  # a nested repository's whole git directory
)

#: Names whose presence makes a walk look closer (the sandbox finds protected paths by them).
PROTECTED_NAMES = frozenset({".env", ".avatar.yaml", ".git"})


def protected_by(rel: str, mode: Mode, is_dir: bool, allow: Sequence[str] = ()) -> str | None:
    """The protected pattern root-relative POSIX path `rel` falls under for `mode` access, or
    None; a pattern (or path) named in `allow` (`scope.allow_protected`) lifts its protection."""
    if rel in ("", "."):
        return None
    if rel == ".git" and not is_dir and mode == "write":
        pattern = "/.git"  # a gitfile: it says which git directory commands use
        return None if _allowed(pattern, rel, is_dir, allow) else pattern
    for pattern, modes in PROTECTED:
        if mode in modes and pattern_matches(pattern, rel, is_dir):
            return None if _allowed(pattern, rel, is_dir, allow) else pattern
    return None


def _allowed(pattern: str, rel: str, is_dir: bool, allow: Sequence[str]) -> bool:
    return any(a.strip() == pattern or pattern_matches(a, rel, is_dir) for a in allow)
