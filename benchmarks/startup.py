"""Start-up wall time as a ratio to the venv's own `python -c pass`.

Targets: `--version` ≤ 3×, `--help` ≤ 3×, `session list` ≤ 6× (run in an empty project with an
empty `$AVATAR_HOME`, so the figure is the command's fixed cost, not the listing).

And what a config file adds: `session list` with the documented example (every key) as its
config file, ≤ 1.5× the same command without one. Reading a file once loaded pydantic and
built its schema, ~110 ms, on every command (2.5× here); see `avatar.core.exact`.
"""

from __future__ import annotations

import sys

from benchmarks.common import ROOT, Command, avatar_exe, interleaved, row, scratch

EXAMPLE = ROOT / "examples" / "avatar.example.yaml"


def run(quick: bool) -> list[dict[str, object]]:
    """Measure start-up against the bare interpreter, interleaved in the same run."""
    runs = 11 if quick else 31
    with scratch("startup") as (proj, env):
        t = interleaved(
            {
                "base": Command([sys.executable, "-c", "pass"]),
                "version": Command([avatar_exe(), "--version"]),
                "help": Command([avatar_exe(), "--help"]),
                "list": Command([avatar_exe(), "session", "list"], env, proj),
                "configured": Command(
                    [avatar_exe(), "session", "list"], {**env, "AVATAR_CONFIG": str(EXAMPLE)}, proj
                ),
                # What any click command line on this interpreter pays before its own code.
                "click": Command([sys.executable, "-c", "import click, pathlib"]),
            },
            runs,
        )
    base = t["base"]
    return [
        row("python -c pass (baseline)", base, None, "-", True),
        row("avatar --version", t["version"], base, "≤ 3× baseline", t["version"] <= 3 * base),
        row("avatar --help", t["help"], base, "≤ 3× baseline", t["help"] <= 3 * base),
        row("avatar session list", t["list"], base, "≤ 6× baseline", t["list"] <= 6 * base),
        row("import click, pathlib (floor of a click CLI)", t["click"], base, "(reported)", True),
        row(
            "avatar session list, the documented example as config file",
            t["configured"],
            t["list"],
            "≤ 1.5× without one",
            t["configured"] <= 1.5 * t["list"],
        ),
    ]
