"""The wheel avatar builds: the package with its data files and `py.typed`, so a type checker
reads avatar's own annotations in a project that uses `avatar.Engine` (PEP 561)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BUILD = "import sys; from hatchling.build import build_wheel; print(build_wheel(sys.argv[1]))"


def test_the_wheel_ships_py_typed_and_the_data_files(tmp_path: Path) -> None:
    # The build backend is pinned in requirements.lock with the rest (.ci/lock).
    built = subprocess.run(
        [sys.executable, "-c", BUILD, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stderr
    with zipfile.ZipFile(tmp_path / built.stdout.strip().splitlines()[-1]) as wheel:
        names = set(wheel.namelist())
    assert {
        "avatar/py.typed",
        "avatar/providers/providers.toml",
        "avatar/cli/help.txt",
        "avatar/native/tools/catalog.json",
    } <= names
    assert not any(n.startswith(("tests/", "bridges/", "benchmarks/")) for n in names)
