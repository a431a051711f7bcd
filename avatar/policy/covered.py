"""Finding, inside the session's directories, the paths the sandbox must cover: those the scope
denies (hidden from reads) and the protected ones (kept read-only); and, in the project's git
directory, what stays read-only when the user opened it (`git_covers`).

Deny patterns such as `**/.env` can match at any depth, so the tree is walked. The walk is kept:
each directory's modification time says whether an entry was added, removed or renamed in it
since, so checking again before the next command restats the directories and rescans only the
changed ones (a project of 2,500 directories: ~50 ms to walk, ~8 ms to check).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from avatar.policy.patterns import pattern_matches
from avatar.policy.protected import GIT_FINER, protected_by

# Names the protected paths can have; anything else is only matched against deny patterns.
_PROTECTED_PREFIXES = (".env", ".avatar.yaml", ".git")


@dataclass
class Findings:
    """What one directory holds that the sandbox covers."""

    hidden: list[Path] = field(default_factory=list)
    read_only: list[Path] = field(default_factory=list)
    subdirs: list[Path] = field(default_factory=list)


@dataclass
class _Scanned:
    """What a scan of one directory found, and its mtime then."""

    mtime_ns: int
    findings: Findings


class CoveredTree:
    """The denied and protected paths under one root, kept up to date cheaply."""

    def __init__(self, root: Path, deny: Sequence[str], allow_protected: Sequence[str]) -> None:
        self.root = root
        self.deny = list(deny)
        self.allow = list(allow_protected)
        self._dirs: dict[Path, _Scanned] = {}

    def refresh(self) -> tuple[list[Path], list[Path]]:
        """(hidden, read-only) paths as the tree is now."""
        hidden: list[Path] = []
        read_only: list[Path] = []
        stack = [self.root]
        seen: set[Path] = set()
        while stack:
            directory = stack.pop()
            seen.add(directory)
            found = self._scan(directory)
            if found is None:
                continue
            hidden += found.hidden
            read_only += found.read_only
            stack += found.subdirs
        for gone in self._dirs.keys() - seen:
            del self._dirs[gone]
        return hidden, read_only

    def _scan(self, directory: Path) -> Findings | None:
        try:
            mtime = os.stat(directory).st_mtime_ns
        except OSError:
            self._dirs.pop(directory, None)
            return None
        cached = self._dirs.get(directory)
        if cached is not None and cached.mtime_ns == mtime:
            return cached.findings
        found = Findings()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    self._classify(entry, found)
        except OSError:
            return None
        self._dirs[directory] = _Scanned(mtime, found)
        return found

    def _classify(self, entry: os.DirEntry[str], found: Findings) -> None:
        path = Path(entry.path)
        rel = path.relative_to(self.root).as_posix()
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_link = entry.is_symlink()
        except OSError:
            return
        target = Path(os.path.realpath(path)) if is_link else path
        if is_link and not target.exists():
            return
        target_is_dir = target.is_dir() if is_link else is_dir
        if any(pattern_matches(p, rel, target_is_dir) for p in self.deny) or (
            entry.name.startswith(_PROTECTED_PREFIXES)
            and protected_by(rel, "read", target_is_dir, self.allow)
        ):
            found.hidden.append(target)
            return
        if entry.name.startswith(_PROTECTED_PREFIXES) and protected_by(
            rel, "write", target_is_dir, self.allow
        ):
            found.read_only.append(target)
            return
        if is_dir and rel != ".git":
            found.subdirs.append(path)


def git_covers(root: Path, allow: Sequence[str]) -> tuple[list[Path], list[Path]]:
    """(pinned, read-only) paths of the git directory of project `root`. Whole, it is read-only (the
    walk finds it); opened (`allow_protected: [.git]`), it is pinned — a mount point cannot
    be renamed, so it cannot be swapped for a repository the agent built — and what decides
    what runs in it stays read-only (`GIT_FINER`)."""
    git = root / ".git"
    if not os.path.lexists(git):
        if protected_by(".git", "write", True, allow) and _in_work_tree(root.parent):
            # A project inside a repository: a `.git` made here would be the repository
            # the user's next `git` in it uses. An empty one, read-only, cannot be filled,
            # and git looks past it to the repository above, as it did.
            with contextlib.suppress(OSError):
                git.mkdir()
                return [], [git]
        return [], []
    if not git.is_dir() or git.is_symlink():
        return [], []  # a gitfile or a link: the walk covers them
    if protected_by(".git", "write", True, allow):
        # Read-only whole (the walk finds it), but for what an entry opens inside it.
        return _opened_inside(git, ".git", allow), []
    read_only: list[Path] = []
    for name in GIT_FINER:
        path = git / name
        if not protected_by(f".git/{name}", "write", path.is_dir(), allow):
            continue
        if name in ("hooks", "info") and not path.exists():
            # A hooks directory the agent could create would run its hooks on the user's
            # next commit; an empty one, read-only, cannot be filled.
            with contextlib.suppress(OSError):
                path.mkdir()
        if path.exists():
            read_only.append(path)
    return [git], read_only


def _opened_inside(directory: Path, rel: str, allow: Sequence[str]) -> list[Path]:
    """What `allow_protected` entries naming paths inside the protected `directory` (at
    root-relative `rel`) open: bound writable over its read-only mount. Entries are followed
    down as far as their text names directories."""
    named = [a.strip().lstrip("/").removeprefix("./") for a in allow]
    if not any(n.startswith(rel + "/") for n in named):
        return []
    out: list[Path] = []
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            if entry.is_symlink():
                continue
            below, is_dir = f"{rel}/{entry.name}", entry.is_dir()
            if protected_by(below, "write", is_dir, allow) is None:
                out.append(Path(entry.path))
            elif is_dir:
                out += _opened_inside(Path(entry.path), below, allow)
    return out


def _in_work_tree(directory: Path) -> bool:
    """Does `directory` (or one above it) hold a `.git`?"""
    return any(os.path.lexists(d / ".git") for d in (directory, *directory.parents))
