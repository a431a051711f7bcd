"""Walking the project for `grep` and `find`: skips denied paths, VCS and cache directories."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

from avatar.scope import ScopePolicy

# Never descended into unless the search starts inside one: huge, generated, or private.
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)


def walk(
    start: Path, scope: ScopePolicy, stop: threading.Event, *, dirs: bool = False
) -> Iterator[Path]:
    """Files (and with `dirs`, directories) under `start` the scope lets the model read.

    Sorted per directory so results are stable; symlinks are followed only when their target
    is inside the scope, directories never (no cycles).
    """
    if start.is_file():
        yield start
        return
    for top, dirnames, filenames in os.walk(start):
        if stop.is_set():
            return
        base = Path(top)
        keep = []
        for d in sorted(dirnames):
            p = base / d
            if d in SKIP_DIRS or p.is_symlink() or scope.is_hidden(p):
                continue
            keep.append(d)
        dirnames[:] = keep
        if dirs:
            for d in keep:
                yield base / d
        for name in sorted(filenames):
            p = base / name
            if p.is_symlink():
                real = Path(os.path.realpath(p))
                if not real.is_file() or scope.is_hidden(real):
                    continue
            elif scope.is_hidden(p):
                continue
            yield p
