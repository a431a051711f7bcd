"""git's metadata is protected as a whole (issue 30): the `commondir` attack
(`tests/support/git_attack.py`) planted by the native `bash` tool (the wall) and by the native
`write` tool (the door) leaves the user's next `git status` running nothing; git still works
inside the walls; `scope.allow_protected: [.git]` lets an agent commit, and still not plant
the attack.

Each case is a real `avatar chat` on the native agent against the fake model server, under
`--permission allow`; then `git status` runs as the user, outside every wall."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support import git_attack
from tests.support.drive import avatar
from tests.support.homes import AgentHome
from tests.support.model_server import FakeModelServer, Reply


@pytest.fixture
def project(agent_home: AgentHome) -> Path:
    git_attack.init(agent_home.workdir)
    return agent_home.workdir


def _chat(env: dict[str, str], project: Path) -> None:
    run = avatar(env, project, "-p", "native", "chat", "--permission", "allow", "go", timeout=90)
    assert run.returncode == 0, run.stderr


def test_bash_cannot_plant_a_commondir(
    project: Path, avatar_env: dict[str, str], model_server: FakeModelServer, tmp_path: Path
) -> None:
    marker = tmp_path / "fsmonitor-ran"
    call = Reply.tool_call("bash", {"command": git_attack.command(marker)})
    model_server.chat.append(call, Reply.text("done"))
    _chat(avatar_env, project)
    assert not (project / ".git" / "commondir").exists()
    assert not git_attack.users_git_status_runs_it(project, marker)


def test_write_cannot_plant_a_commondir(
    project: Path, avatar_env: dict[str, str], model_server: FakeModelServer, tmp_path: Path
) -> None:
    marker = tmp_path / "fsmonitor-ran"
    writes = [
        Reply.tool_call("write", {"path": rel, "content": content})
        for rel, content in git_attack.files(marker).items()
    ]
    model_server.chat.append(*writes, Reply.text("done"))
    _chat(avatar_env, project)
    results = [r.json()["messages"][-1]["content"] for r in model_server.requests_for("chat")[1:]]
    assert len(results) == 4 and all("protected path" in r for r in results), results
    assert not (project / ".git" / "evil").exists()
    assert not git_attack.users_git_status_runs_it(project, marker)


def test_git_reads_its_repository_inside_the_walls(
    project: Path, avatar_env: dict[str, str], model_server: FakeModelServer
) -> None:
    """With `.git` read-only, `git status`, `diff` and `log` still work (the index is not
    refreshed on disk); a commit is refused."""
    (project / "README").write_text("changed\n")
    script = (
        "git status --short; git diff --stat; git log --format=%s; "
        "git -c user.name=a -c user.email=a@a commit -qam x && echo committed"
    )
    model_server.chat.append(Reply.tool_call("bash", {"command": script}), Reply.text("done"))
    _chat(avatar_env, project)
    shown = model_server.requests_for("chat")[1].json()["messages"][-1]["content"]
    lines = shown.splitlines()
    assert lines[:2] == [" M README", " README | 2 +-"], shown
    assert "start" in lines and "committed" not in shown, shown
    log = subprocess.run(["git", "log", "--format=%s"], cwd=project, capture_output=True, text=True)
    assert log.stdout == "start\n"


def test_allowing_git_lets_an_agent_commit_but_not_plant_a_commondir(
    project: Path, avatar_env: dict[str, str], model_server: FakeModelServer, tmp_path: Path
) -> None:
    config = {"scope": {"allow_protected": [".git"]}}
    Path(avatar_env["AVATAR_CONFIG"]).write_text(json.dumps(config))
    marker = tmp_path / "fsmonitor-ran"
    (project / "README").write_text("changed\n")
    commit = "git -c user.name=a -c user.email=a@a commit -qam agent && echo committed"
    model_server.chat.append(
        Reply.tool_call("bash", {"command": commit}),
        Reply.tool_call("write", {"path": ".git/commondir", "content": "evil\n"}),
        Reply.text("done"),
    )
    _chat(avatar_env, project)
    results = [r.json()["messages"][-1]["content"] for r in model_server.requests_for("chat")[1:]]
    assert "committed" in results[0] and "protected path" in results[1], results
    log = subprocess.run(["git", "log", "--format=%s"], cwd=project, capture_output=True, text=True)
    assert log.stdout == "agent\nstart\n"
    assert not git_attack.users_git_status_runs_it(project, marker)
