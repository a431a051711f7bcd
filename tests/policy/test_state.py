"""An agent's state inside its walls (`avatar.policy.state`): what configures programs to run is
read-only (a missing file made first as a stand-in, so it cannot be created); in directories
of one entry per project, this project's entry is writable and the others are neither readable
nor writable. Driven through a walled process (`Sandbox`); the end-to-end proof with real Claude
Code is tests/integration/test_agent_state.py."""

from __future__ import annotations

import os
from pathlib import Path

from avatar.policy.sandbox import Sandbox, state_dirs
from avatar.policy.state import new_names, project_slug, state_walls
from tests.support.walled import run_walled


def _agent(home: Path, project: Path, protected: list[str], projects: dict[str, str]) -> Sandbox:
    env = {"HOME": str(home)}
    states = state_dirs(["~/.agent/"], env)
    walls = state_walls(protected, projects, env, project)
    return Sandbox("agent", project, state_dirs=states, state=walls, home=home)


def test_protected_state_is_read_only_and_a_missing_file_cannot_be_made(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    project.mkdir()
    (home / ".agent").mkdir(parents=True)
    (home / ".agent" / "config.toml").write_text("model = 'x'\n")
    (home / ".agent" / "hook.sh").write_text("true\n")
    protected = [
        "~/.agent/config.toml",
        "~/.agent/settings.json",
        "~/.agent/plugins/",
        "~/.agent/*.sh",
        "?~/.agent/optional.json",
    ]
    state = home / ".agent"
    box = _agent(home, project, protected, {})
    try:
        out = run_walled(
            box,
            "for f in config.toml settings.json hook.sh optional.json plugins/p; do "
            f"echo pwned > {state}/$f; done; echo log > {state}/log.txt",
            project,
        )
        assert out.stderr.count("Read-only file system") == 4, out.stderr
    finally:
        box.close()
    assert (state / "config.toml").read_text() == "model = 'x'\n"
    assert (state / "settings.json").read_text() == "{}\n"  # the stand-in, as it was made
    assert (state / "hook.sh").read_text() == "true\n"
    assert list((state / "plugins").iterdir()) == []
    # Covered only when it exists: made by the agent, as its sessions and logs are.
    assert (state / "optional.json").read_text() == "pwned\n"
    assert (state / "log.txt").read_text() == "log\n"


def test_other_projects_entries_are_out_of_reach(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    project.mkdir()
    projects = home / ".agent" / "projects"
    other = projects / project_slug(str(tmp_path / "other"))
    other.mkdir(parents=True)
    (other / "s.jsonl").write_text("SECRET\n")
    box = _agent(home, project, [], {"~/.agent/projects/": "slug"})
    mine = projects / project_slug(str(project))
    try:
        out = run_walled(
            box,
            f"echo mine >> {mine}/s.jsonl; echo x >> {other}/s.jsonl; cat {other}/s.jsonl; "
            f"mkdir {projects}/new; echo x > {projects}/planted.jsonl",
            project,
        )
        assert "SECRET" not in out.stdout
    finally:
        box.close()
    assert (mine / "s.jsonl").read_text() == "mine\n"
    assert (other / "s.jsonl").read_text() == "SECRET\n"
    assert sorted(os.listdir(projects)) == sorted([mine.name, other.name])


def test_a_marker_names_the_projects_entry_in_every_directory(tmp_path: Path) -> None:
    """Gemini CLI's layout: `tmp/<name>` and `history/<name>`, owned by a `.project_root`
    file; a new project gets the name Gemini would give it, in both, with its markers."""
    home, project = tmp_path / "home", tmp_path / "My Proj"
    project.mkdir()
    tmp = home / ".agent" / "tmp"
    taken = tmp / "my-proj"  # another project's, of the same name
    taken.mkdir(parents=True)
    (taken / ".project_root").write_text("/elsewhere/my-proj")
    (tmp / "background-processes").mkdir()
    rules = {"~/.agent/tmp/": "marker:.project_root", "~/.agent/history/": "marker:.project_root"}
    box = _agent(home, project, [], rules)
    mine = tmp / "my-proj-1"
    try:
        out = run_walled(
            box,
            f"echo s > {mine}/chat; echo x > {mine}/.project_root; echo x > {taken}/chat; "
            f"echo log > {tmp}/background-processes/l; mkdir {tmp}/forged",
            project,
        )
        assert out.returncode != 0
    finally:
        box.close()
    assert (mine / "chat").read_text() == "s\n"
    for base in (tmp, home / ".agent" / "history"):
        assert (base / mine.name / ".project_root").read_text() == str(project)
    assert not (taken / "chat").exists() and not (tmp / "forged").exists()
    assert (tmp / "background-processes" / "l").read_text() == "log\n"


def test_new_names_are_gemini_clis() -> None:
    names = new_names(Path("/x/My_Proj.v2"))
    assert [next(names) for _ in range(3)] == ["my-proj-v2", "my-proj-v2-1", "my-proj-v2-2"]
    assert next(new_names(Path("/x/___"))) == "project"
