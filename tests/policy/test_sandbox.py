"""The sandbox's parts on their own: what a command may read and write, the covered paths kept
up to date as the tree changes, the scrubbed environment, state directories, and what is said
about the walls. The end-to-end proofs are tests/hardening/test_sandbox_walls.py (native bash),
tests/integration/test_agent_walls.py (agents) and test_kill_sandboxed_command.py."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from avatar.core.config import Scope
from avatar.policy.covered import CoveredTree
from avatar.policy.readable import program_prefixes
from avatar.policy.sandbox import (
    Sandbox,
    command_env,
    entered,
    for_agent,
    for_commands,
    notices,
    state_dirs,
    support,
    walls,
)
from avatar.policy.scope import ScopePolicy
from tests.support.walled import run_walled


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print('a')\n")
    (root / ".env").write_text("SECRET=1\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def test_a_command_reads_and_writes_the_project_and_nothing_outside(
    tree: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("outside\n")
    box = Sandbox("commands", tree)
    try:
        ok = run_walled(box, "cat src/a.py && echo b > src/b.py && cat src/b.py", tree)
        assert ok.returncode == 0 and ok.stdout == "print('a')\nb\n", ok.stderr
        read = run_walled(box, f"cat {outside}", tree)
        assert read.returncode != 0 and "outside" not in read.stdout
        write = run_walled(box, f"echo x > {tmp_path}/new.txt", tree)
        assert write.returncode != 0 and not (tmp_path / "new.txt").exists()
        secret = run_walled(box, "cat .env /etc/shadow", tree)
        assert "SECRET" not in secret.stdout and "root:" not in secret.stdout
    finally:
        box.close()


def test_a_command_sees_only_its_own_processes(tree: Path) -> None:
    box = Sandbox("commands", tree)
    try:
        out = run_walled(box, "ls /proc | grep -c '^[0-9]'; echo $$", tree)
        count, pid = out.stdout.split()
        assert int(count) <= 3 and pid == "1", out.stdout  # bash, ls, grep: nothing of ours
    finally:
        box.close()


def test_an_agents_walls_are_for_writes(tree: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    outside = tmp_path / "outside.txt"
    outside.write_text("readable\n")
    box = Sandbox("agent", tree, state_dirs=[state])
    try:
        state.mkdir()
        out = run_walled(box, f"cat {outside} && echo s > {state}/s && echo x > {tmp_path}/x", tree)
        assert out.stdout == "readable\n"
        assert (state / "s").read_text() == "s\n" and not (tmp_path / "x").exists()
    finally:
        box.close()


def test_avatars_own_data_is_never_writable_inside_the_walls(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project that holds avatar's data dir (`~` as the project, say): an agent there may not
    write the trust store, nor the launch a one-shot starts claude from before anything checks
    it (avatar reads both outside the walls), while the rest of the project stays its to
    write."""
    data = tree / "share" / "avatar"
    (data / "cache" / "launches").mkdir(parents=True)
    (data / "trust.json").write_text("{}")
    monkeypatch.setenv("AVATAR_HOME", str(data))
    box = Sandbox("agent", tree)
    try:
        out = run_walled(
            box,
            "echo '{\"files\": 1}' > share/avatar/trust.json; "
            "echo x > share/avatar/cache/launches/l.json; echo y > src/y.py",
            tree,
        )
        assert (data / "trust.json").read_text() == "{}", out.stderr
        assert not (data / "cache" / "launches" / "l.json").exists()
        assert (tree / "src" / "y.py").read_text() == "y\n"
    finally:
        box.close()


def _start(box: Sandbox, script: str, cwd: Path) -> subprocess.Popen[bytes]:
    env = box.env({"PATH": os.environ["PATH"], "HOME": str(cwd)})
    with entered(box, ["bash", "-c", script], env, cwd) as entry:
        return subprocess.Popen(
            entry.argv, cwd=cwd, env=env, pass_fds=entry.pass_fds, start_new_session=True
        )


def test_an_agent_runs_under_an_init_that_passes_sigterm_on(tree: Path, tmp_path: Path) -> None:
    """An agent is PID 2 of its own namespace, under the stub's init; avatar's SIGTERM to its
    process group reaches the agent, which ends as it chooses (here: writes a file, exits 3),
    and avatar sees that exit; an agent killed by a signal is seen killed by it."""
    state = tmp_path / "state"
    state.mkdir()
    box = Sandbox("agent", tree, state_dirs=[state])
    try:
        script = (
            f"echo $$ > {state}/pid; trap 'echo clean > {state}/ended; exit 3' TERM; "
            "while :; do sleep 0.05; done"
        )
        agent = _start(box, script, tree)
        deadline = time.monotonic() + 30
        while not (state / "pid").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        os.killpg(agent.pid, signal.SIGTERM)
        assert agent.wait(30) == 3
        assert (state / "pid").read_text() == "2\n"
        assert (state / "ended").read_text() == "clean\n"
        assert _start(box, "kill -USR1 $$", tree).wait(30) == -signal.SIGUSR1
    finally:
        box.close()


def test_the_covered_tree_follows_changes_and_rescans_only_changed_directories(
    tree: Path,
) -> None:
    covered = CoveredTree(tree, ["**/.env", "*.pem"], [])
    hidden, read_only = covered.refresh()
    assert hidden == [tree / ".env"]
    assert read_only == [tree / ".git"]  # git's metadata, whole
    (tree / "src" / "key.pem").write_text("k")
    (tree / "vendor" / "lib").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(tree / "vendor" / "lib")], check=True)
    hidden, read_only = covered.refresh()
    assert sorted(hidden) == [tree / ".env", tree / "src" / "key.pem"]
    assert sorted(read_only) == [tree / ".git", tree / "vendor" / "lib" / ".git"]
    (tree / ".env").unlink()
    assert covered.refresh()[0] == [tree / "src" / "key.pem"]


def test_allow_protected_lifts_a_protection(tree: Path) -> None:
    covered = CoveredTree(tree, [], ["**/.env", ".git"])
    assert covered.refresh() == ([], [])


def test_no_repository_can_be_made_in_a_project_inside_one(tmp_path: Path) -> None:
    """A project that is a directory of a repository gets an empty read-only `.git`: git
    looks past it to the repository above, and nothing can fill it."""
    repo = tmp_path / "repo"
    project = repo / "sub"
    project.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    box = Sandbox("commands", project)
    try:
        made = run_walled(box, "git init -q; mkdir .git/x; echo x > .git/config", project)
        assert made.returncode != 0 and os.listdir(project / ".git") == []
        top = ["git", "-C", str(project), "rev-parse", "--show-toplevel"]  # the user's git
        assert subprocess.run(top, capture_output=True, text=True).stdout == f"{repo}\n"
    finally:
        box.close()


def test_the_environment_is_an_allow_list() -> None:
    env = {
        "PATH": "/bin",
        "HOME": "/h",
        "LC_ALL": "C",
        "OPENAI_API_KEY": "sk-x",
        "GITHUB_TOKEN": "ghp_x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "HTTPS_PROXY": "http://u:p@proxy",
    }
    assert command_env(env) == {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C"}


def test_state_dirs_expand_and_make_missing_directories(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / "cx")}
    paths = state_dirs(["$CODEX_HOME/", "~/.claude/", "~/.claude.json", "$UNSET_VAR/"], env)
    assert paths == [tmp_path / "cx", tmp_path / ".claude", tmp_path / ".claude.json"]
    assert (tmp_path / "cx").is_dir() and (tmp_path / ".claude").is_dir()
    assert not (tmp_path / ".claude.json").exists()  # a file is the agent's to make


def test_program_prefixes_cover_a_venv_but_never_the_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    venv_bin = tmp_path / "proj" / ".venv" / "bin"
    local_bin = home / ".local" / "bin"
    venv_bin.mkdir(parents=True)
    local_bin.mkdir(parents=True)
    found = program_prefixes(f"{venv_bin}:{local_bin}:/usr/bin", home)
    assert venv_bin.parent in found and local_bin in found
    assert home not in found and home / ".local" not in found  # ~/.local/share: avatar's data
    assert Path("/usr") not in found


def test_program_prefixes_never_come_from_a_writable_place(tmp_path: Path) -> None:
    """A `PATH` directory a walled process can write adds nothing, nor do its links; a link
    elsewhere is followed only to a program, never to the home or above it."""
    home = tmp_path / "home"
    project = tmp_path / "proj"
    venv_bin = project / ".venv" / "bin"
    local_bin = home / ".local" / "bin"
    tool = home / ".local" / "pipx" / "venvs" / "black" / "bin" / "black"
    for d in (venv_bin, local_bin, tool.parent, home / ".ssh"):
        d.mkdir(parents=True)
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    (home / "run.sh").write_text("#!/bin/sh\n")
    (home / "run.sh").chmod(0o755)
    (venv_bin / "x").symlink_to(home / ".ssh")
    (local_bin / "black").symlink_to(tool)
    (local_bin / "ssh-dir").symlink_to(home / ".ssh")
    (local_bin / "run").symlink_to(home / "run.sh")
    found = program_prefixes(f"{venv_bin}:{local_bin}", home, (project,))
    assert venv_bin not in found and home not in found and home / ".ssh" not in found
    assert tool.parent in found and tool.parent.parent in found  # pipx's venv of black
    assert set(found) == {local_bin, tool.parent, tool.parent.parent}


def test_sandbox_modes_choose_what_is_walled(tree: Path) -> None:
    env = {"PATH": "/bin", "HOME": str(tree)}
    agents = ScopePolicy(Scope(), tree)
    commands = ScopePolicy(Scope(sandbox="commands"), tree)
    off = ScopePolicy(Scope(sandbox="off"), tree)
    assert for_agent(agents, [], env) is not None and for_commands(agents, env) is not None
    assert for_agent(commands, [], env) is None and for_commands(commands, env) is not None
    assert for_agent(off, [], env) is None and for_commands(off, env) is None


def test_what_the_walls_are_called_and_what_is_told() -> None:
    assert support().walls  # the kernel here offers Landlock (ABI 7)
    assert walls("agents", "acp", ["~/.codex/"]) == "agent"
    assert walls("agents", "acp") == "agent (no state_dirs)"
    assert walls("agents", "native") == "commands"
    assert walls("commands", "stream-json") == "commands"
    assert walls("off", "acp") == "off"
    assert notices("agents") == [] and notices("off") == []  # nothing is missing here
