"""Start-up wall time as a ratio to the venv's own `python -c pass`.

Targets: `--version` ≤ 3×, `--help` ≤ 3×, `session list` ≤ 6× (run in an empty project with an
empty `$AVATAR_HOME`, so the figure is the command's fixed cost, not the listing).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks.common import avatar_exe, median_wall, row


def run(quick: bool) -> list[dict[str, object]]:
    """Measure start-up against the bare interpreter in the same run."""
    runs = 11 if quick else 31
    base = median_wall([sys.executable, "-c", "pass"], runs)
    version = median_wall([avatar_exe(), "--version"], runs)
    helptext = median_wall([avatar_exe(), "--help"], runs)
    root = Path(tempfile.mkdtemp(prefix="avatar-bench-startup-"))
    try:
        (root / "home").mkdir()
        (root / "proj").mkdir()
        env = {
            **os.environ,
            "HOME": str(root / "home"),
            "AVATAR_HOME": str(root / "avatar-home"),
            "AVATAR_CONFIG": str(root / "no-config.yaml"),
        }
        listing = median_wall([avatar_exe(), "session", "list"], runs, env=env, cwd=root / "proj")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return [
        row("python -c pass (baseline)", base, None, "-", True),
        row("avatar --version", version, base, "≤ 3× baseline", version <= 3 * base),
        row("avatar --help", helptext, base, "≤ 3× baseline", helptext <= 3 * base),
        row("avatar session list", listing, base, "≤ 6× baseline", listing <= 6 * base),
    ]
