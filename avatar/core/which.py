"""Finding a program on a search path, as `shutil.which` does on POSIX, without `shutil`.

Every agent's start looks its program up; `shutil` brings its archive modules (`bz2`, `lzma`,
`zlib`): ~1.5 ms of a cold one-shot before the agent can start (docs/startup.md). The answers
are `shutil.which`'s (tests/core/test_which.py compares them).
"""

from __future__ import annotations

import os


def which(program: str, path: str | None = None) -> str | None:
    """The file `program` names that would run: `program` itself when it holds a `/`, else the
    first executable file of that name in `path`'s directories (`$PATH`, else the system's
    default, when None). None when there is none."""
    if os.sep in program:
        return program if _runnable(program) else None
    if path is None:
        path = os.environ.get("PATH")
        if path is None:
            path = _default_path()
    if not path:
        return None
    seen = set()
    for directory in path.split(os.pathsep):
        if directory in seen:
            continue
        seen.add(directory)
        candidate = os.path.join(directory, program)
        if _runnable(candidate):
            return candidate
    return None


def _default_path() -> str:
    try:
        return os.confstr("CS_PATH") or ""
    except (AttributeError, ValueError):
        return os.defpath


def _runnable(file: str) -> bool:
    return os.path.exists(file) and os.access(file, os.F_OK | os.X_OK) and not os.path.isdir(file)
