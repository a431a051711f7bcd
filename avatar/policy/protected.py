"""Protected paths (docs/design.md §10): refused at every door and by the sandbox, whatever the
scope says, unless the user names one in `scope.allow_protected`.

They are the files through which a write becomes code that runs later, or a read reveals a
secret:

- avatar's own config: `.avatar.yaml` at any depth (a project's config, or a subproject's)
  and the user config file — an agent that rewrites them chooses what the next `avatar` runs;
- git's metadata, as a whole: the project's `.git` (a directory, or a `gitdir:` file naming
  one) and any nested `.git` below the root. Which parts of a git directory decide what runs
  is an open list — `config`, `hooks/`, `info/`, `worktrees/*/`, `modules/*/config`, and
  `commondir`, which makes another directory (one the agent made inside `.git`, with its own
  `config`) the source of the repository's config — so the whole directory is kept: committing
  is the user's;
- `.env` and `.env.*` at any depth: read too, since they hold secrets.

`scope.allow_protected: [.git]` opens the project's git directory (an agent may commit), but
not what decides what runs in it (`GIT_FINER`): each of those opens only when named itself
(`.git/hooks`, `.git/config`, …), never by `.git` alone; nor does a `.git` *file* (it names
the git directory commands use) ever open. An entry naming a path inside a
protected one opens that path (`.git/hooks` lets hooks be written). Patterns are scope patterns
(`avatar.policy.scope`), matched against root-relative paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from avatar.policy.patterns import pattern_matches

Mode = Literal["read", "write"]

#: The project's git directory (or gitfile), as a whole.
GIT = "/.git"
#: (scope pattern, the modes it protects). Order: the first match names the reason.
PROTECTED: tuple[tuple[str, frozenset[Mode]], ...] = (
    (".env", frozenset({"read", "write"})),
    (".env.*", frozenset({"read", "write"})),
    (".avatar.yaml", frozenset({"write"})),
    (GIT, frozenset({"write"})),
    ("*/**/.git", frozenset({"write"})),  # a nested repository's whole git directory
)
#: Inside the project's git directory opened with `allow_protected: [.git]`, what still
#: decides what git runs (or which directory it takes its config from); each opens only when
#: an entry names it (or a path inside it), never by naming `.git`.
GIT_FINER = ("config", "config.worktree", "commondir", "hooks", "info", "modules", "worktrees")

#: Names whose presence makes a walk look closer (the sandbox finds protected paths by them).
PROTECTED_NAMES = frozenset({".env", ".avatar.yaml", ".git"})


def protected_by(rel: str, mode: Mode, is_dir: bool, allow: Sequence[str] = ()) -> str | None:
    """The protected pattern root-relative POSIX path `rel` falls under for `mode` access, or
    None; a pattern (or path) named in `allow` (`scope.allow_protected`) lifts its protection."""
    if rel in ("", "."):
        return None
    for pattern, modes in PROTECTED:
        if mode in modes and pattern_matches(pattern, rel, is_dir):
            if not _allowed(pattern, rel, is_dir, allow):
                return pattern
            if pattern != GIT:
                return None
            # A gitfile names the git directory to use: opening `.git` never opens it.
            return pattern if rel == ".git" and not is_dir else _finer(rel, allow)
    return None


def _finer(rel: str, allow: Sequence[str]) -> str | None:
    """For a path inside an opened project `.git`: the part of `GIT_FINER` it falls under,
    unless an entry names that part (an entry that also matches `.git` itself does not)."""
    for name in GIT_FINER:
        pattern = f"{GIT}/{name}"
        if pattern_matches(pattern, rel) and not any(
            a.strip() == pattern
            or (pattern_matches(a, rel) and not pattern_matches(a, ".git", True))
            for a in allow
        ):
            return pattern
    return None


def _allowed(pattern: str, rel: str, is_dir: bool, allow: Sequence[str]) -> bool:
    return any(a.strip() == pattern or pattern_matches(a, rel, is_dir) for a in allow)
