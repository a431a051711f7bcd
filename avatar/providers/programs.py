"""An agent's program on disk: where it is (config path, PATH, the checkout's pinned CLIs) and
which version it is (its npm package's manifest, else `--version`)."""

from __future__ import annotations

import os
from pathlib import Path

from avatar.core import quickjson
from avatar.core.which import which

# The checkout's pinned agent CLIs (`cd bridges && npm ci` installs them).
BRIDGES_BIN = Path(__file__).resolve().parents[2] / "bridges" / "node_modules" / ".bin"


def find_executable(program: str, path: str | None = None) -> str | None:
    """Config path, then PATH, then the checkout's `bridges/node_modules/.bin` (docs/design.md
    §2)."""
    if not program:
        return None
    if os.sep in program:
        p = Path(program).expanduser()
        # Absolute: `./agent` as a string would become `agent`, which exec looks up on PATH.
        return os.path.abspath(p) if p.is_file() and os.access(p, os.X_OK) else None
    found = which(program, path)
    if found:
        return found
    candidate = BRIDGES_BIN / program
    if candidate.exists() and os.access(candidate, os.X_OK):
        return str(candidate)
    return None


def looked_at(program: str, path: str | None = None) -> list[str]:
    """The files `find_executable(program, path)` looks at, in its order, up to the one it
    finds: what decides its answer."""
    if not program or os.sep in program:
        return [os.path.abspath(Path(program).expanduser())] if program else []
    out = []
    seen = set()
    for directory in (path if path is not None else os.environ.get("PATH", "")).split(os.pathsep):
        if directory in seen:
            continue
        seen.add(directory)
        candidate = os.path.join(directory, program)
        out.append(candidate)
        if which(os.path.abspath(candidate)):
            return out
    out.append(str(BRIDGES_BIN / program))
    return out


def package_version(executable: str, package: str | None) -> str | None:
    """The version of the npm package an executable belongs to, read from its package.json."""
    real = Path(os.path.realpath(executable))
    for parent in real.parents:
        manifest = parent / "package.json"
        if manifest.is_file():
            try:
                data = quickjson.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            if package is None or data.get("name") == package:
                version = data.get("version")
                return str(version) if version else None
        if parent.name == "node_modules":
            break
    return None


def executable_version(executable: str, package: str | None) -> str | None:
    """The version the CLI or its npm package reports; `--version` only as a last resort."""
    version = package_version(executable, package)
    if version:
        return version
    from avatar.core.quick_run import quick_run

    out = quick_run([executable, "--version"])
    if out is None:
        return None
    first = (out.stdout or out.stderr).strip().splitlines()
    return first[0].strip() if first and out.returncode == 0 else None
