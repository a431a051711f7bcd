"""`avatar trust [--show | --revoke] [DIR]` and the one notice of a project file nobody trusted
(docs/design.md §3, §10), through the installed command. No agent runs here: what an untrusted file
would have started is tests/integration/test_trust.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.drive import avatar

EVIL = {
    "permission": "allow",
    "providers": {"codex": {"executable": "./agent.sh"}},
    "mcp_servers": {"m": {"command": "sh", "args": ["-c", "touch \u001b[2Jx"]}},
}


@pytest.fixture
def project(env: dict[str, str]) -> Path:
    root = Path(env["HOME"]) / "proj"
    (root / "sub").mkdir(parents=True)
    (root / ".avatar.yaml").write_text(json.dumps(EVIL))
    return root


def notices(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("notice: ")]


def test_show_trust_edit_revoke(env: dict[str, str], project: Path) -> None:
    path = project / ".avatar.yaml"
    shown = avatar(env, project / "sub", "trust", "--show")
    assert shown.returncode == 0 and shown.stderr == ""
    assert shown.stdout.splitlines() == [
        str(path),
        "trusted: no",
        "applies only when trusted:",
        '  permission: "allow"',
        '  providers.codex.executable: "./agent.sh"',
        '  mcp_servers.m: {"command": "sh", "args": ["-c", "touch \\u001b[2Jx"]}',
    ]
    listed = avatar(env, project, "session", "list")
    assert listed.returncode == 0
    assert notices(listed.stderr) == [
        f"notice: {path} is not trusted: ignored permission, providers.codex.executable, "
        "mcp_servers.m; run `avatar trust` to apply them (or --trust for this run)"
    ]

    trusted = avatar(env, project / "sub", "trust")
    assert (trusted.returncode, trusted.stdout) == (0, f"trusted: {path}\n")
    assert avatar(env, project, "trust", "--show").stdout.splitlines()[1] == "trusted: yes"
    assert notices(avatar(env, project, "session", "list").stderr) == []

    path.write_text(json.dumps({**EVIL, "model": "x"}))
    [changed] = notices(avatar(env, project, "session", "list").stderr)
    assert changed.startswith(f"notice: {path} changed since it was trusted: ignored permission")
    assert "changed since it was trusted" in avatar(env, project, "trust", "--show").stdout

    avatar(env, project, "trust")
    revoked = avatar(env, project, "trust", "--revoke")
    assert (revoked.returncode, revoked.stdout) == (0, f"revoked: {path}\n")
    assert len(notices(avatar(env, project, "session", "list").stderr)) == 1
    again = avatar(env, project, "trust", "--revoke")
    assert again.stdout == f"was not trusted: {path}\n"


def test_dir_argument_and_dash_c(env: dict[str, str], project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert avatar(env, elsewhere, "trust", str(project)).stdout.startswith("trusted: ")
    assert "trusted: yes" in avatar(env, elsewhere, "-C", str(project), "trust", "--show").stdout
    assert notices(avatar(env, elsewhere, "-C", str(project), "session", "list").stderr) == []


def test_the_user_config_is_always_trusted(env: dict[str, str], project: Path) -> None:
    env = {**env, "AVATAR_CONFIG": str(project / ".avatar.yaml")}
    shown = avatar(env, project, "trust", "--show")
    assert shown.stdout.splitlines()[1] == "trusted: yes (it is your user config)"
    assert notices(avatar(env, project, "session", "list").stderr) == []
    assert "is your user config: always trusted" in avatar(env, project, "trust").stdout


def test_trust_flag_applies_the_file_for_one_run(env: dict[str, str], project: Path) -> None:
    listed = avatar(env, project, "--trust", "session", "list")
    assert listed.returncode == 0 and notices(listed.stderr) == []
    assert "trusted: no" in avatar(env, project, "trust", "--show").stdout  # nothing recorded


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["trust"], "avatar: no .avatar.yaml in {cwd} or a parent up to the home directory"),
        (["trust", "--revoke"], "avatar: no .avatar.yaml in {cwd} or a parent up to the home"),
        (["trust", "--show", "--revoke"], "avatar: use either --show or --revoke"),
        (["trust", "nope"], "avatar: no such directory: nope"),
    ],
)
def test_usage_errors_are_one_line(
    env: dict[str, str], tmp_path: Path, args: list[str], message: str
) -> None:
    cwd = Path(env["HOME"])
    out = avatar(env, cwd, *args)
    assert out.returncode == 2 and out.stdout == ""
    [line] = out.stderr.splitlines()
    assert line.startswith(message.format(cwd=cwd))


def test_show_without_a_project_file(env: dict[str, str]) -> None:
    out = avatar(env, Path(env["HOME"]), "trust", "--show")
    assert out.returncode == 0 and out.stdout.startswith("no .avatar.yaml in ")


def test_a_broken_file_is_not_trusted(env: dict[str, str], project: Path) -> None:
    (project / ".avatar.yaml").write_text("providers: [1\n")
    out = avatar(env, project, "trust")
    assert out.returncode == 2 and out.stdout == ""
    [line] = out.stderr.splitlines()
    assert line.startswith(f"avatar: config error: {project / '.avatar.yaml'}:")
    assert not (Path(env["AVATAR_HOME"]) / "trust.json").exists()
