"""`avatar providers` finds the four pinned agent CLIs of `bridges/` with their versions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PINNED = json.loads((ROOT / "bridges" / "package.json").read_text())["dependencies"]
EXPECTED = {
    "claude": "@anthropic-ai/claude-code",
    "claude-acp": "@zed-industries/claude-agent-acp",
    "codex": "@zed-industries/codex-acp",
    "gemini": "@google/gemini-cli",
}

pytestmark = pytest.mark.integration


def test_providers_finds_every_pinned_cli_with_its_version(tmp_path: Path) -> None:
    if not (ROOT / "bridges" / "node_modules" / ".bin").is_dir():
        pytest.skip("agent CLIs not installed: run npm ci --prefix bridges")
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
    for name, package in EXPECTED.items():
        row = rows[name]
        assert row["found"], f"{name} not found"
        assert row["version"] == PINNED[package], (name, row)
        assert Path(row["path"]).is_file()
