"""Finding an agent's project config (`avatar.policy.agent_config`): what a repository can put
in the way of the search that runs before every agent starts."""

from __future__ import annotations

import os
from pathlib import Path

from avatar.policy.agent_config import MAX_FILES, project_files
from avatar.policy.trust import TrustStore


def test_a_symlink_loop_in_a_config_directory_is_walked_once(tmp_path: Path) -> None:
    """`.codex/loop -> ..` (and a loop through the project) must not make every agent start
    walk forever: each real directory is walked once."""
    root = tmp_path / "repo"
    (root / ".codex" / "rules").mkdir(parents=True)
    (root / ".codex" / "rules" / "x.rules").write_text("allow")
    os.symlink("..", root / ".codex" / "rules" / "up")
    os.symlink(root, root / ".codex" / "project")
    files = project_files(root, [".codex/"], TrustStore(tmp_path / "store"), home=tmp_path)
    assert [f.path.relative_to(root) for f in files] == [Path(".codex/rules/x.rules")]


def test_a_directory_with_too_many_files_is_never_trusted(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    many = root / ".gemini" / "commands"
    many.mkdir(parents=True)
    for i in range(MAX_FILES + 1):
        (many / f"c{i}.toml").touch()
    store = TrustStore(tmp_path / "store")
    files = project_files(root, [".gemini/"], store, home=tmp_path)
    assert len(files) == MAX_FILES + 1
    assert (files[-1].path, files[-1].digest) == (root / ".gemini", None)
    store.trust_digests([(f.real, f.digest) for f in files if f.digest is not None])
    again = project_files(root, [".gemini/"], store, home=tmp_path)
    assert [f.path for f in again if f.held] == [root / ".gemini"]


def test_the_agents_own_state_in_the_project_is_not_its_project_config(tmp_path: Path) -> None:
    """A `CODEX_HOME` kept in the project is codex's state (sessions, auth): not held back
    behind a stand-in, nor listed for trust."""
    from avatar.bridges.held_back import holding
    from avatar.providers.registry import shipped

    root = tmp_path / "repo"
    (root / ".codex").mkdir(parents=True)
    (root / ".codex" / "config.toml").write_text('model = "x"\n')
    env = {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(root / ".codex")}
    held = holding(shipped()["codex"], root, tmp_path / "store", env)
    assert not held.held and not held.covered
    away = holding(shipped()["codex"], root, tmp_path / "store", {"HOME": env["HOME"]})
    assert away.covered == (root / ".codex",)
