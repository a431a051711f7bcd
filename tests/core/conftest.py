"""Fixtures of the tests that run the installed `avatar` in an empty home."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An empty HOME (where the search for a project's config stops), avatar's data dir and no
    user config, with this checkout's `avatar` first on PATH."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "HOME": str(home),
        "AVATAR_HOME": str(tmp_path / "avatar-home"),
        "AVATAR_CONFIG": str(tmp_path / "no-config.yaml"),
        "LANG": "C.UTF-8",
    }
