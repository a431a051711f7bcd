"""`avatar providers`: what is installed and what each provider can do."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from avatar.cli.table import render_table
from avatar.providers import ProviderSpec, executable_version, find_executable

if TYPE_CHECKING:
    from avatar.cli.commands import AppState


def detect(spec: ProviderSpec, path_env: str | None) -> dict[str, Any]:
    """Found or not, where, which version, and what the provider is known to support."""
    path = None
    version = None
    if spec.transport == "native":
        from avatar import __version__

        found, version = True, __version__
    else:
        path = find_executable(spec.executable or "", path_env)
        found = path is not None
        if path is not None:
            version = executable_version(path, spec.package)
    return {
        "name": spec.name,
        "transport": spec.transport,
        "found": found,
        "path": path,
        "version": version,
        "capabilities": list(spec.known_capabilities),
        "install": spec.install_hint,
        "auth": spec.auth_hint,
    }


def show_providers(state: AppState, *, json_out: bool) -> int:
    """Print the provider table (or JSON)."""
    engine = state.engine()
    specs = engine.providers()
    path_env = engine.env.get("PATH")
    # Version probes may spawn a CLI; run them side by side.
    with ThreadPoolExecutor(max_workers=len(specs) or 1) as pool:
        rows = list(pool.map(lambda s: detect(s, path_env), specs))
    if json_out:
        public = [
            {k: r[k] for k in ("name", "transport", "found", "path", "version", "capabilities")}
            for r in rows
        ]
        sys.stdout.write(json.dumps(public, indent=2) + "\n")
        return 0
    table = [
        [
            r["name"],
            r["transport"],
            "yes" if r["found"] else "no",
            r["version"] or "-",
            ", ".join(r["capabilities"]) or "-",
            r["path"] or ("built in" if r["transport"] == "native" else f"install: {r['install']}"),
        ]
        for r in rows
    ]
    sys.stdout.write(
        render_table(["provider", "transport", "found", "version", "sessions", "path"], table)
    )
    sys.stdout.write("\nauthentication:\n")
    for r in rows:
        sys.stdout.write(f"  {r['name']}: {r['auth']}\n")
    return 0
