"""Two checks of the scope policy (`avatar.policy.scope`) that look at the filesystem, not at names.

- A program given with a path (`/usr/bin/ls`) counts as its name (`ls`) for the allow-list
  only when it is the program of that name on `PATH` (or lies in a `PATH` directory): an
  allowed name must not let an agent run its own `./ls` or `/tmp/x/ls`.
- A write to an existing file with several hard links is refused: the other names may lie
  outside the scope (or under a deny pattern), and the write would change them too. Reading
  such a file is allowed (its content is in the project under this name, as a copy would be).
"""

from __future__ import annotations

import os
from pathlib import Path

from avatar.core.which import which
from avatar.policy.denied import ScopeDenied


def program_name(program: str) -> str:
    """The allow-list name of `program` (argv[0]); raises `ScopeDenied` for a path that is
    not the `PATH` program of its name."""
    name = os.path.basename(program)
    if "/" not in program:
        return name
    if not os.path.isabs(program):
        raise ScopeDenied(
            f"command {program!r} is not allowed by the scope: run allowed programs by name"
        )
    real = os.path.realpath(program)
    found = which(name)
    if found is not None and os.path.realpath(found) == real:
        return name
    path = os.environ.get("PATH", "").split(os.pathsep)
    if os.path.dirname(real) in {os.path.realpath(d) for d in path if os.path.isabs(d)}:
        return name  # e.g. /bin/ls where PATH finds /usr/bin/ls first
    raise ScopeDenied(
        f"command {program!r} is not allowed by the scope: it is not the {name!r} on PATH"
    )


def refuse_hard_link(real: Path, mode: str, refused: str) -> None:
    """Raise `ScopeDenied` for a write to an existing regular file with other hard links."""
    if mode != "write":
        return
    try:
        st = os.stat(real)
    except OSError:
        return  # a new file: nothing else can share it
    import stat

    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        raise ScopeDenied(
            f"{refused}: the file has other hard links, which may lie outside the scope"
        )
