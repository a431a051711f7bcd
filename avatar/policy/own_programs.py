"""Where avatar finds a program it runs for the user outside the walls (the REPL's editor, pager
and clipboard tool): on the user's `PATH`, but never in a directory a walled process can
write. An agent may write anywhere in the project: with the project's `.venv/bin` on `PATH`
(an activated virtualenv), a `less` or `wl-paste` it planted there would otherwise run outside
its walls the next time the user pressed Ctrl-O or Ctrl-V. A program named by its full path
(`EDITOR=/opt/bin/ed`) is the user's explicit choice and is taken as named.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


def program_outside(program: str, search_path: str, writable: Sequence[Path]) -> str | None:
    """The executable `program` names: itself when it is a path, else the first one on
    `search_path` outside every directory of `writable` (resolved); None when none is."""
    if os.sep in program:
        return program if os.access(program, os.X_OK) else None
    untrusted = [Path(os.path.realpath(w)) for w in writable]
    for entry in filter(None, search_path.split(os.pathsep)):
        written = Path(os.path.abspath(entry))
        if not written.is_absolute() or any(
            p.is_relative_to(w) for w in untrusted for p in (written, Path(os.path.realpath(entry)))
        ):
            continue
        candidate = written / program
        real = Path(os.path.realpath(candidate))
        if any(real.is_relative_to(w) for w in untrusted):  # (a link into the project)
            continue
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None
