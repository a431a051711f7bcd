"""Start-up wall time as a ratio to the venv's own `python -c pass`.

Targets: `--version` ≤ 3×, `--help` ≤ 3×, `session list` ≤ 6× (run in an empty project with an
empty `$AVATAR_HOME`, so the figure is the command's fixed cost, not the listing).

And what a config file adds: `session list` with the documented example (every key) as its
config file, ≤ 1.5× the same command without one; and what native sessions add: the same in a
project with 20 of them, ≤ 1.5× (its index was read by pydantic, ~80 ms of loading and
schema: 2.2× here; see `avatar.native.store.index_record`). Reading a file once loaded pydantic and
built its schema, ~110 ms, on every command (2.5× here); see `avatar.core.exact`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.common import ROOT, Command, avatar_exe, interleaved, row, scratch

EXAMPLE = ROOT / "examples" / "avatar.example.yaml"


def run(quick: bool) -> list[dict[str, object]]:
    """Measure start-up against the bare interpreter, interleaved in the same run."""
    runs = 11 if quick else 31
    with scratch("startup") as (proj, env), scratch("startup-native") as (native, native_env):
        _native_sessions(native, Path(native_env["AVATAR_HOME"]), 20)
        t = interleaved(
            {
                "base": Command([sys.executable, "-c", "pass"]),
                "version": Command([avatar_exe(), "--version"]),
                "help": Command([avatar_exe(), "--help"]),
                "list": Command([avatar_exe(), "session", "list"], env, proj),
                "configured": Command(
                    [avatar_exe(), "session", "list"], {**env, "AVATAR_CONFIG": str(EXAMPLE)}, proj
                ),
                "native": Command([avatar_exe(), "session", "list"], native_env, native),
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
        row(
            "avatar session list, a project of 20 native sessions",
            t["native"],
            t["list"],
            "≤ 1.5× without them",
            t["native"] <= 1.5 * t["list"],
        ),
    ]


def _native_sessions(project: Path, home: Path, count: int) -> None:
    """`count` native sessions of `project`, titled, as the native agent's store writes them."""
    from avatar.native.store.manager import SessionManager

    manager = SessionManager(home)
    for i in range(count):
        header, writer = manager.create(project, model="openai/gpt-4o")
        manager.set_title(header.id, f"session {i}", writer)
        writer.close()
