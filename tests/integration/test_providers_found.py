"""`avatar providers` finds the four pinned agent CLIs of `bridges/`, each with the version
bridges/package.json pins for the npm package the provider table names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from avatar.providers import registry as providers

ROOT = Path(__file__).resolve().parents[2]
PINNED = json.loads((ROOT / "bridges" / "package.json").read_text())["dependencies"]
AGENTS = ("claude", "claude-acp", "codex", "gemini")

pytestmark = pytest.mark.integration


def test_providers_finds_every_pinned_cli_with_its_version(tmp_path: Path) -> None:
    if not (ROOT / "bridges" / "node_modules" / ".bin").is_dir():
        pytest.skip("agent CLIs not installed: run cd bridges && npm ci")
    env = {
        # A PATH without the developer's own installs: the checkout's bridges/ must be found.
        "PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin",
        "HOME": str(tmp_path),
        "AVATAR_HOME": str(tmp_path / "avatar"),
        "AVATAR_CONFIG": str(tmp_path / "none.yaml"),
    }
    out = subprocess.run(
        [sys.executable, "-m", "avatar", "providers", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    shipped = providers.shipped()
    for name in AGENTS:
        # The npm package the provider table names is the one bridges/ pins.
        package = shipped[name].package
        assert package in PINNED, (name, package, sorted(PINNED))
        row = rows[name]
        assert row["found"], f"{name} not found"
        assert row["version"] == PINNED[package], (name, row)
        assert Path(row["path"]).is_file()
