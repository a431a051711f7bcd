"""An agent's program on disk: where it is found."""

from __future__ import annotations

from pathlib import Path

import pytest

from avatar.providers import programs


def test_find_executable_relative_path_and_no_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A configured `./agent` runs by its absolute path (a bare `agent` would be looked up on
    PATH); no program at all is not found (it is not the bridges directory)."""
    agent = tmp_path / "agent"
    agent.write_text("#!/bin/sh\n")
    agent.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    assert programs.find_executable("./agent") == str(agent)
    assert programs.find_executable("") is None
