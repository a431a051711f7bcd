"""The kernel is the wall (issue 20, acceptance 1): with `shell_commands: [echo, cat, ls, bash,
find, git]`, scripted native `bash` calls — redirections, reads an allowed program makes, the
shell's own expansions, rc files, programs that run others — create, change or reveal nothing
outside the scope or in a protected path.

Each case is a real `avatar chat` on the native agent against the fake model server; the model
asks for one command, and the test looks at the file system and at the next model request (what
the model was shown), never at refusal text: the allow-list may refuse a command politely, or the
sandbox may let it run and stop it; either way nothing may change or leak.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.drive import avatar
from tests.support.homes import AgentHome
from tests.support.model_server import FakeModelServer, Reply

ALLOWED = "[echo, cat, ls, bash, find, git]"
SECRET = "OUTSIDE-SECRET-7f3a"
DOTENV = "DOTENV-SECRET-91c2"
KEYS = {
    "GEMINI_API_KEY": "AIzaSyFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE12",
    "GITHUB_TOKEN": "ghp_FAKEfakeFAKEfakeFAKEfakeFAKEfake1234",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYFAKEKEY12",
    "ANTHROPIC_API_KEY": "sk-ant-FAKEfakeFAKEfakeFAKEfake-0123456789",
}

# (id, command). OUT is the directory outside the project; each command tries to create
# OUT/pwned, change a protected file, or show a secret.
ATTACKS = [
    ("redirect-out", "echo hi > OUT/pwned"),
    ("append-git-config", "echo '[core]\n\tfsmonitor = touch OUT/pwned' >> .git/config"),
    ("new-hook", "echo 'touch OUT/pwned' > .git/hooks/post-checkout"),
    ("nested-git-config", "echo '[core] fsmonitor=x' >> sub/.git/config"),
    ("avatar-config", "echo 'providers: {x: {command: [touch, OUT/pwned]}}' > .avatar.yaml"),
    ("cat-outside", "cat OUT/secret"),
    ("ls-outside", "ls OUT"),
    ("cat-dotenv", "cat .env .env.local"),
    ("arith-expansion", "x='a[$(touch OUT/pwned)]'; echo ${a[x]}"),
    ("prompt-expansion", "x='$(touch OUT/pwned)'; echo ${x@P}"),
    ("rcfile", "echo 'touch OUT/pwned' > r; bash --rcfile r -ic ls"),
    ("login-home", "echo 'echo hi > OUT/pwned' > .bash_profile; HOME=. bash -lc ls"),
    ("find-exec", "find . -maxdepth 0 -exec bash -c 'echo hi > OUT/pwned' ';'"),
    ("git-alias", "git -c alias.x='!echo hi > OUT/pwned' x"),
    ("git-fsmonitor", "git -c core.fsmonitor='echo hi > OUT/pwned' status"),
    ("proc-environ", "cat /proc/$PPID/environ /proc/1/environ"),
    ("bash-env", "bash -c 'echo $GITHUB_TOKEN $GEMINI_API_KEY $AWS_SECRET_ACCESS_KEY'"),
    ("swap-git", "bash -c 'mv .git .git-old && mkdir -p .git/hooks && echo x > .git/config'"),
]


@pytest.fixture
def project(agent_home: AgentHome, avatar_env: dict[str, str], tmp_path: Path) -> Path:
    work = agent_home.workdir
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text(SECRET + "\n")
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(["git", "init", "-q", str(work / "sub")], check=True)
    (work / ".env").write_text(f"TOKEN={DOTENV}\n")
    (work / ".env.local").write_text(f"TOKEN={DOTENV}\n")
    (work / ".avatar.yaml").write_text("model: gpt-4o\n")
    config = Path(avatar_env["AVATAR_CONFIG"])
    config.write_text(f"scope:\n  shell_commands: {ALLOWED}\n")
    return work


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every protected file's bytes (and the hooks directory's listing)."""
    files = [".git/config", "sub/.git/config", ".env", ".env.local", ".avatar.yaml"]
    out = {f: (root / f).read_bytes() for f in files}
    out["hooks"] = "\n".join(sorted(os.listdir(root / ".git" / "hooks"))).encode()
    out["git"] = "\n".join(sorted(os.listdir(root / ".git"))).encode()
    return out


@pytest.mark.parametrize("command", [c for _, c in ATTACKS], ids=[i for i, _ in ATTACKS])
def test_a_shell_trick_changes_and_reveals_nothing(
    project: Path,
    avatar_env: dict[str, str],
    model_server: FakeModelServer,
    tmp_path: Path,
    command: str,
) -> None:
    outside = tmp_path / "outside"
    before = _snapshot(project)
    script = command.replace("OUT", str(outside))
    model_server.chat.append(Reply.tool_call("bash", {"command": script}), Reply.text("done"))
    env = {**avatar_env, **KEYS}
    run = avatar(env, project, "-p", "native", "chat", "--permission", "allow", "go", timeout=60)
    assert run.returncode == 0, run.stderr
    assert sorted(os.listdir(outside)) == ["secret"]
    assert _snapshot(project) == before
    requests = model_server.requests_for("chat")
    assert len(requests) == 2, "the model saw the tool's result"
    shown = json.dumps(requests[1].json())
    for secret in (SECRET, DOTENV, *KEYS.values()):
        assert secret not in shown


def test_inside_the_project_commands_still_work(
    project: Path, avatar_env: dict[str, str], model_server: FakeModelServer
) -> None:
    """The walls keep the work possible: files in the project are written and read in one
    command, git reads its repository, the private temp dir is writable."""
    Path(avatar_env["AVATAR_CONFIG"]).write_text("scope: {}\n")
    script = (
        "echo made > new.txt && cat new.txt && mkdir -p d/e && echo x > d/e/f && ls d/e "
        '&& echo t > "$TMPDIR/t" && cat "$TMPDIR/t" && git rev-parse --git-dir'
    )
    model_server.chat.append(Reply.tool_call("bash", {"command": script}), Reply.text("done"))
    run = avatar(avatar_env, project, "-p", "native", "chat", "--permission", "allow", "go")
    assert run.returncode == 0, run.stderr
    result = model_server.requests_for("chat")[1].json()["messages"][-1]["content"]
    assert result.split("\n")[:4] == ["made", "f", "t", ".git"], result
    assert (project / "d" / "e" / "f").read_text() == "x\n"


def test_commands_get_a_scrubbed_environment(
    project: Path, avatar_env: dict[str, str], model_server: FakeModelServer
) -> None:
    """`env` in a command shows no key avatar holds, whatever the allow-list."""
    Path(avatar_env["AVATAR_CONFIG"]).write_text("scope: {}\n")
    model_server.chat.append(Reply.tool_call("bash", {"command": "env"}), Reply.text("done"))
    env = {**avatar_env, **KEYS, "AWS_ACCESS_KEY_ID": "AKIAFAKEFAKEFAKEFAKE"}
    run = avatar(env, project, "-p", "native", "chat", "--permission", "allow", "go")
    assert run.returncode == 0, run.stderr
    shown = model_server.requests_for("chat")[1].json()["messages"][-1]["content"]
    names = {line.split("=", 1)[0] for line in shown.splitlines() if "=" in line}
    assert "PATH" in names and "HOME" in names and "TMPDIR" in names
    for name in (*KEYS, "AWS_ACCESS_KEY_ID", "OPENAI_API_KEY", "OPENAI_BASE_URL", "AVATAR_HOME"):
        assert name not in names, shown


def test_sandbox_off_is_the_users_choice(
    project: Path, avatar_env: dict[str, str], model_server: FakeModelServer, tmp_path: Path
) -> None:
    """`scope.sandbox: off` runs commands as before: the allow-list alone decides (and here
    lets the write through, which is what `off` means)."""
    Path(avatar_env["AVATAR_CONFIG"]).write_text("scope:\n  sandbox: off\n")
    target = tmp_path / "outside" / "made"
    model_server.chat.append(
        Reply.tool_call("bash", {"command": f"echo x > {target}"}), Reply.text("done")
    )
    run = avatar(avatar_env, project, "-p", "native", "chat", "--permission", "allow", "go")
    assert run.returncode == 0, run.stderr
    assert target.read_text() == "x\n"


def test_a_link_planted_in_a_venv_on_path_widens_no_reads(
    project: Path, avatar_env: dict[str, str], model_server: FakeModelServer, agent_home: AgentHome
) -> None:
    """An activated `.venv/bin` inside the project is on `PATH`: a symlink one command plants
    there (`ln -s ~/.ssh .venv/bin/x`) must not make the home readable to the next command."""
    Path(avatar_env["AVATAR_CONFIG"]).write_text("scope: {}\n")
    ssh = agent_home.home / ".ssh"
    ssh.mkdir()
    (ssh / "id_rsa").write_text(f"{SECRET}\n")
    venv_bin = project / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    env = {
        **avatar_env,
        "PATH": f"{venv_bin}:{avatar_env['PATH']}",
        "VIRTUAL_ENV": str(venv_bin.parent),
    }
    for command in (
        f"ln -s {ssh} .venv/bin/x && ln -s {ssh}/id_rsa .venv/bin/y",
        f"cat {ssh}/id_rsa",
    ):
        model_server.chat.append(Reply.tool_call("bash", {"command": command}), Reply.text("done"))
        run = avatar(env, project, "-p", "native", "chat", "--permission", "allow", "go")
        assert run.returncode == 0, run.stderr
    assert (venv_bin / "x").is_symlink()  # planted: the first command ran
    shown = model_server.requests_for("chat")[-1].json()["messages"][-1]["content"]
    assert SECRET not in shown and "Permission denied" in shown, shown
