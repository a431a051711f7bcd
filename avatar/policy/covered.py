"""Finding, inside the session's directories, the paths the sandbox must cover: those the scope
denies (hidden from reads) and the protected ones (kept read-only).

Deny patterns such as `**/.env` can match at any depth, so the tree is walked. The walk is kept:
each directory's modification time says whether an entry was added, removed or renamed in it
since, so checking again before the next command restats the directories and rescans only the
changed ones (a project of 2,500 directories: ~50 ms to walk, ~8 ms to check).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from avatar.policy.patterns import pattern_matches
from avatar.policy.protected import protected_by

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
