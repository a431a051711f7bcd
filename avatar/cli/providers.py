"""`avatar providers`: what is installed, whether it is logged in, and what it can do."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.cli.output.table import render_table
from avatar.core.version import __version__
from avatar.providers.facts import CapabilityCache, hint, logged_in
from avatar.providers.programs import executable_version, find_executable

if TYPE_CHECKING:
    from avatar.cli.state import AppState
    from avatar.engine.engine import Engine
    from avatar.providers.registry import ProviderSpec

PUBLIC = (
    "name",
    "transport",
    "found",
    "path",
    "version",
    "capabilities",
    "logged_in",
    "hint",
    "sandbox",
    "state_dirs",
    "state_guessed",
)


def detect(engine: Engine, spec: ProviderSpec, cache: CapabilityCache) -> dict[str, Any]:
    """Found or not, where, which version, logged in or not, and its last known capabilities."""
    env = engine.registry.env_for(spec)
    path = None
    version = None
    capabilities: list[str] | None
    if spec.transport == "native":
        found, version, capabilities = True, __version__, list(spec.capabilities)
    else:
        path = find_executable(spec.executable or "", env.get("PATH"))
        found = path is not None
        if path is not None:
            version = executable_version(path, spec.package)
        capabilities = cache.get(spec.name, version) if found else None
    logged = logged_in(spec, env, engine.settings) if found else None
    return {
        "name": spec.name,
        "transport": spec.transport,
        "found": found,
        "path": path,
        "version": version,
        "capabilities": capabilities,
        "logged_in": logged,
        "hint": hint(spec, found, logged),
        "sandbox": engine.walls(spec.name),
        "state_dirs": [str(p) for p in engine.registry.state_dirs(spec)],
        "state_guessed": spec.state_guessed,
        "install": spec.install_hint,
        "auth": spec.auth_hint,
    }


def _home_relative(path: str, home: str) -> str:
    return "~" + path[len(home) :] if home and path.startswith(home + "/") else path


def _capabilities(row: dict[str, Any]) -> str:
    caps = row["capabilities"]
    if caps is None:
        return "unknown until first start" if row["found"] else "-"
    return ", ".join(caps) or "none"


def _login(row: dict[str, Any]) -> str:
    return {True: "yes", False: "no", None: "-" if not row["found"] else "?"}[row["logged_in"]]


def show_providers(state: AppState, *, json_out: bool) -> int:
    """Print the provider table (or JSON): the core five always, other agents when found."""
    engine = state.engine()
    cache = CapabilityCache(engine.home)
    specs = engine.registry.specs()
    # Version probes may spawn a CLI; run them side by side.
    with ThreadPoolExecutor(max_workers=len(specs) or 1) as pool:
        rows = list(pool.map(lambda s: detect(engine, s, cache), specs))
    rows = [r for r, s in zip(rows, specs, strict=True) if s.builtin or r["found"]]
    if json_out:
        public = [{k: r[k] for k in PUBLIC} for r in rows]
        sys.stdout.write(json.dumps(public, indent=2) + "\n")
        return 0
    table = [
        [
            r["name"],
            r["transport"],
            "yes" if r["found"] else "no",
            r["version"] or "-",
            _login(r),
            r["sandbox"],
            _capabilities(r),
        ]
        for r in rows
    ]
    sys.stdout.write(
        render_table(
            ["provider", "transport", "found", "version", "logged in", "sandbox", "sessions"],
            table,
            shrink=6,
        )
    )
    guessed = [r for r in rows if r["state_guessed"] and r["state_dirs"]]
    if guessed:
        home = str(Path(engine.registry.env.get("HOME") or Path.home()))
        sys.stdout.write("\nguessed state dirs (name them in providers.NAME.state_dirs):\n")
        for r in guessed:
            dirs = ", ".join(_home_relative(d, home) for d in r["state_dirs"])
            sys.stdout.write(f"  {r['name']}: {dirs}\n")
    todo = [r for r in rows if r["hint"]]
    if todo:
        sys.stdout.write("\nto enable:\n")
        for r in todo:
            sys.stdout.write(f"  {r['name']}: {r['hint']}\n")
    sys.stdout.write(FACES)
    return 0


#: avatar itself for other clients (docs/design.md §12), under the same config, walls and
#: secret rules as these providers; the table's readers would not find them otherwise.
FACES = (
    "\navatar for other clients:\n"
    "  avatar acp: an ACP agent for editors (Zed, JetBrains, Neovim), every provider above\n"
    "  avatar mcp: the session library as MCP tools (avatar mcp --install claude|codex|gemini)\n"
)
