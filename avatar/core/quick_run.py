"""Running a short helper command (git, an agent's `--version`) and reading its answer."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence


def quick_run(argv: Sequence[str], timeout: float = 5) -> subprocess.CompletedProcess[str] | None:
    """Run `argv` with no stdin, its output captured as text; None when it cannot run or
    takes longer than `timeout` seconds (the caller then goes on without the answer)."""
    try:
        return subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
