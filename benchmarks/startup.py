"""`avatar --version` and `avatar --help` wall time as a ratio to `python -c pass` (target ≤ 3×)."""

from __future__ import annotations

import sys

from benchmarks.common import avatar_exe, median_wall, row


def run(quick: bool) -> list[dict[str, object]]:
    """Measure start-up against the bare interpreter in the same run."""
    runs = 11 if quick else 31
    base = median_wall([sys.executable, "-c", "pass"], runs)
    version = median_wall([avatar_exe(), "--version"], runs)
    helptext = median_wall([avatar_exe(), "--help"], runs)
    return [
        row("python -c pass (baseline)", base, None, "-", True),
        row("avatar --version", version, base, "≤ 3× baseline", version <= 3 * base),
        row("avatar --help", helptext, base, "(reported)", True),
    ]
