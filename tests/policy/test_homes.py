"""The homes avatar guesses for an agent from config without `state_dirs`
(`avatar.policy.homes`), and what an agent's failure says when its walls refused it a path
(`avatar.bridges.walled_out`). The end-to-end proof, with a fake ACP agent through the real
`avatar` command: tests/integration/test_unknown_agents.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from avatar.bridges.walled_out import explained, refused
from avatar.core.config import ProviderConfig, Scope
from avatar.policy import homes
from avatar.policy.readable import expand
from avatar.policy.sandbox import for_agent, state_dirs
from avatar.policy.scope import ScopePolicy
from avatar.providers.registry import resolve_spec
from tests.support.walled import run_walled


def test_the_homes_of_an_agents_names() -> None:
    assert homes.names("heron", ["/opt/heron/bin/heron-cli", "--acp"]) == ["heron", "heron-cli"]
    # An ACP adapter's program runs an agent whose home has the name without `-acp`.
    assert homes.names("my-agent", ["pi-acp"]) == ["my-agent", "pi-acp", "pi"]
    assert homes.entries(["heron"]) == (
        "~/.heron/",
        "${XDG_CONFIG_HOME:-~/.config}/heron/",
        "${XDG_DATA_HOME:-~/.local/share}/heron/",
        "${XDG_STATE_HOME:-~/.local/state}/heron/",
        "${XDG_CACHE_HOME:-~/.cache}/heron/",
    )


@pytest.mark.parametrize(
    ("provider", "command"),
    [
        ("avatar", ["npx", "avatar"]),  # avatar's own, never
        ("x", ["npx", "-y", "some-agent"]),  # a launcher: its name says nothing of the agent
        ("x", ["/usr/bin/python3.12", "-m", "agent"]),
        ("git", ["ssh", "host", "agent"]),  # homes whose files run programs outside the walls
        ("systemd", ["/bin/sh"]),
        ("config", ["local"]),  # ~/.config, ~/.local whole
        ("../x", ["a b"]),  # no path component
    ],
)
def test_names_that_are_never_guessed(provider: str, command: list[str]) -> None:
    found = homes.names(provider, command)
    assert found in ([], ["x"]), found


def test_xdg_variables_are_followed_and_defaulted(tmp_path: Path) -> None:
    home = str(tmp_path)
    assert (
        expand("${XDG_DATA_HOME:-~/.local/share}/a/", {"HOME": home}) == tmp_path / ".local/share/a"
    )
    env = {"HOME": home, "XDG_DATA_HOME": "/srv/data"}
    assert expand("${XDG_DATA_HOME:-~/.local/share}/a/", env) == Path("/srv/data/a")


def test_a_guess_never_opens_a_file_the_home_or_avatars_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"HOME": str(tmp_path)}
    monkeypatch.setenv("AVATAR_HOME", str(tmp_path / ".local/share/heron"))
    (tmp_path / ".bashrc").write_text("")
    (tmp_path / ".up").symlink_to(tmp_path)
    assert not homes.keep(tmp_path / ".bashrc", env)  # `~/.bashrc/` would be the file
    assert not homes.keep(tmp_path / ".up", env)  # the home itself, through a link
    assert not homes.keep(tmp_path / ".local", env)  # holds the XDG data home
    assert not homes.keep(tmp_path / ".local/share/heron", env)  # avatar's data
    assert homes.keep(tmp_path / ".heron", env) and homes.keep(tmp_path / ".config/heron", env)


def test_an_agent_from_config_without_state_dirs_gets_the_guess() -> None:
    spec = resolve_spec("heron", ProviderConfig(transport="acp", command=["heron"]))
    assert spec is not None and spec.state_guessed
    assert spec.state_dirs == homes.entries(["heron"])
    named = resolve_spec("heron", ProviderConfig(transport="acp", command=["heron"], state_dirs=[]))
    assert named is not None and (named.state_dirs, named.state_guessed) == ((), False)
    shipped = resolve_spec("codex", ProviderConfig(command=["codex-acp"]))
    assert shipped is not None and not shipped.state_guessed


def test_the_homes_of_agents_avatar_knows_are_never_guessed_for_another() -> None:
    # codex's protected config.toml is data for codex only: another name for codex-acp does
    # not get ~/.codex/ unprotected; it names it in state_dirs (and state_protected).
    spec = resolve_spec("codex2", ProviderConfig(transport="acp", command=["codex-acp"]))
    assert spec is not None and spec.state_dirs == homes.entries(["codex2"])


def test_guessed_homes_made_for_an_agent_are_gone_when_it_left_them_empty(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    project.mkdir()
    (home / ".config").mkdir(parents=True)
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    policy = ScopePolicy(Scope(), project)
    box = for_agent(policy, homes.entries(["heron"]), env, guessed=True)
    assert box is not None
    try:
        out = run_walled(box, f"echo kept > {home}/.config/heron/state; touch {home}/.x", project)
        assert "Permission denied" in out.stderr and not (home / ".x").exists()  # the walls
    finally:
        box.close()
    assert (home / ".config/heron/state").read_text() == "kept\n"
    assert not (home / ".heron").exists() and not (home / ".cache/heron").exists()
    # Asking where they would be makes nothing.
    assert state_dirs(homes.entries(["heron"]), env, guessed=True, make=False)
    assert not (home / ".heron").exists()


NODE = "Error: EACCES: permission denied, mkdir '{}'\n    at Object.mkdirSync (node:fs:1364:3)"
PYTHON = "PermissionError: [Errno 13] Permission denied: '{}'"
GO = "open {}: read-only file system"
RUST = "Error: failed to create `{}`: Permission denied (os error 13)"
COREUTILS = "mkdir: cannot create directory '{}': Permission denied"


@pytest.mark.parametrize("line", [NODE, PYTHON, GO, RUST, COREUTILS])
def test_a_refused_path_outside_the_walls_is_named_with_its_key(tmp_path: Path, line: str) -> None:
    project, outside = tmp_path / "proj", tmp_path / "home" / ".elsewhere" / "db"
    project.mkdir()
    env = {"HOME": str(tmp_path / "home")}
    box = for_agent(ScopePolicy(Scope(), project), ["~/.heron/"], env)
    assert box is not None
    stderr = "starting\n" + line.format(outside) + "\nbye"
    said = explained("heron", "heron exited during initialize (exit code 1)", stderr, box)
    assert said == (
        f"heron exited during initialize (exit code 1); heron may not write {outside}: it is "
        "outside its walls (add it to providers.heron.state_dirs)"
    )
    # Inside the walls (the project, its state dirs), it is not the walls' doing.
    assert (
        refused([line.format(project / "f"), line.format(tmp_path / "home/.heron/x")], box) is None
    )
    assert explained("heron", "failed", "Operation not permitted", box) == "failed"
    assert explained("heron", "failed", stderr, None) == "failed"  # no walls, nothing to say
