"""Sessions in git worktrees of their own (issue 24, acceptance 4), through the real `avatar`
command and the native agent against the fake model server:

- two sessions at once in one repository, each writing `x.txt` with the native `write` tool,
  end with two worktrees and two different files, the main worktree untouched;
- the sandbox refuses a native `bash` redirection from a worktree session into the main
  worktree (the same command from a session in the main worktree writes it);
- a worktree's session is listed with it, resumes in it, and `session delete --worktree`
  removes it (without the flag it is kept), but never with work not committed in it (it says
  what, and `--discard` throws that away);
- a worktree has the submodules the checkout has initialised (a local one here);
- bad input (not a repository, a name in use, a bad name, `--worktree` with `--resume`): one
  line and exit 2.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.drive import SESSION_LINE, avatar, start
from tests.support.homes import AgentHome
from tests.support.model_server import FakeModelServer, RecordedRequest, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(agent_home: AgentHome, avatar_env: dict[str, str]) -> Path:
    """The agent home's project as a git repository with one commit."""
    work = agent_home.workdir
    git(work, "init", "-q")
    (work / "README").write_text("main\n")
    git(work, "add", "README")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    Path(avatar_env["AVATAR_CONFIG"]).write_text("scope: {}\n")  # every command may run
    return work


def worktree(repo: Path, name: str) -> Path:
    """Where avatar puts worktree `name` of `repo` (its git common dir, out of `git status`)."""
    return repo / ".git" / "avatar" / "worktrees" / name


def chat(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return avatar(env, cwd, "-p", "native", "chat", "--permission", "allow", *args)


def session_id(proc: subprocess.CompletedProcess[str]) -> str:
    found = SESSION_LINE.findall(proc.stderr)
    assert len(found) == 1, proc.stderr
    return str(found[0][0])


def tool_then_done(call: Callable[[str], Reply]) -> Callable[[RecordedRequest], Reply]:
    """A reply for either request of a one-tool turn: the tool call for the prompt (made
    from its text), `done` after the tool's result."""

    def answer(request: RecordedRequest) -> Reply:
        last = request.messages()[-1]
        return call(request.last_user_text()) if last.role == "user" else Reply.text("done")

    return answer


def write_x(text: str) -> Reply:
    return Reply.tool_call("write", {"path": "x.txt", "content": text + "\n"})


def test_two_sessions_in_one_repository_write_their_own_x_txt(
    repo: Path, avatar_env: dict[str, str], model_server: FakeModelServer
) -> None:
    both = threading.Barrier(2, timeout=60)  # each first request waits for the other's

    def together(text: str) -> Reply:
        both.wait()
        return write_x(text)

    model_server.chat.append(*[tool_then_done(together)] * 4)
    base = ("-p", "native", "chat", "--permission", "allow", "--worktree")
    runs = [start(avatar_env, repo, *base, name, f"from {name}") for name in ("a", "b")]
    for run in runs:
        _, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
    assert (worktree(repo, "a") / "x.txt").read_text() == "from a\n"
    assert (worktree(repo, "b") / "x.txt").read_text() == "from b\n"
    assert not (repo / "x.txt").exists()
    assert git(repo, "status", "--porcelain") == ""  # neither worktree shows in the main one
    branches = git(repo, "worktree", "list", "--porcelain")
    assert "branch refs/heads/avatar/a" in branches and "branch refs/heads/avatar/b" in branches

    listed = json.loads(avatar(avatar_env, repo, "session", "list", "--json").stdout)
    assert sorted(s["worktree"] for s in listed) == [
        str(worktree(repo, "a")),
        str(worktree(repo, "b")),
    ]
    table = avatar(avatar_env, repo, "session", "list").stdout
    assert "worktree" in table.splitlines()[0]
    info = avatar(avatar_env, repo, "session", "info", listed[0]["id"], "--json")
    assert json.loads(info.stdout)["worktree"] == listed[0]["worktree"]
    found = avatar(avatar_env, repo, "session", "search", "from", "--json")
    hits = json.loads(found.stdout)
    assert sorted(h["id"] for h in hits) == sorted(s["id"] for s in listed), found.stderr
    old = avatar(avatar_env, repo, "session", "prune", "--older-than", "0d", "--dry-run")
    assert all(s["id"] in old.stdout for s in listed), old.stderr


def test_the_sandbox_refuses_a_write_from_a_worktree_into_the_main_worktree(
    repo: Path, avatar_env: dict[str, str], model_server: FakeModelServer
) -> None:
    target = repo / "pwned.txt"
    script = f"echo here > here.txt; echo pwned > {target}"
    bash = Reply.tool_call("bash", {"command": script})
    model_server.chat.append(bash, Reply.text("done"))
    run = chat(avatar_env, repo, "--worktree", "walled", "go")
    assert run.returncode == 0, run.stderr
    assert (worktree(repo, "walled") / "here.txt").read_text() == "here\n"
    assert not target.exists()

    # The same command from a session in the main worktree writes it: the wall moved.
    model_server.chat.append(bash, Reply.text("done"))
    run = chat(avatar_env, repo, "go")
    assert run.returncode == 0, run.stderr
    assert target.read_text() == "pwned\n"


def test_a_worktree_session_resumes_in_its_worktree(
    repo: Path, avatar_env: dict[str, str], model_server: FakeModelServer
) -> None:
    (repo / "README").write_text("changed, not committed\n")
    model_server.chat.append(write_x("first"), Reply.text("done"))
    run = chat(avatar_env, repo, "--worktree", "r", "first")
    assert "uncommitted changes of your checkout are not in it" in run.stderr
    assert (worktree(repo, "r") / "README").read_text() == "main\n"  # made from HEAD
    sid = session_id(run)
    model_server.chat.append(
        Reply.tool_call("write", {"path": "y.txt", "content": "again\n"}), Reply.text("done")
    )
    run = chat(avatar_env, repo, "--resume", sid, "again")  # from the main worktree
    assert run.returncode == 0, run.stderr
    assert session_id(run) == sid
    assert (worktree(repo, "r") / "y.txt").read_text() == "again\n"
    assert not (repo / "y.txt").exists()
    assert "first" in model_server.requests_for("chat")[-1].all_text()  # the same session


def test_session_delete_worktree_removes_it_and_without_the_flag_keeps_it(
    repo: Path, avatar_env: dict[str, str], model_server: FakeModelServer
) -> None:
    sids = {}
    for name in ("gone", "kept"):
        model_server.chat.append(write_x(name), Reply.text("done"))
        sids[name] = session_id(chat(avatar_env, repo, "--worktree", name, name))
    git(worktree(repo, "gone"), "add", "x.txt")
    git(worktree(repo, "gone"), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    run = avatar(avatar_env, repo, "session", "delete", sids["gone"], "--yes", "--worktree")
    assert run.returncode == 0, run.stderr
    assert not worktree(repo, "gone").exists()
    assert "branch avatar/gone kept: it has commits of its own" in run.stderr
    assert "avatar/gone" in git(repo, "branch", "--list")  # the commit is not lost
    run = avatar(avatar_env, repo, "session", "delete", sids["kept"], "--yes")
    assert run.returncode == 0, run.stderr
    assert (worktree(repo, "kept") / "x.txt").read_text() == "kept\n"
    assert f"kept its worktree {worktree(repo, 'kept')}" in run.stderr
    listed = git(repo, "worktree", "list", "--porcelain")
    assert "avatar/kept" in listed and "avatar/gone" not in listed

    model_server.chat.append("plain")
    plain = session_id(chat(avatar_env, repo, "hello"))
    run = avatar(avatar_env, repo, "session", "delete", plain, "--yes", "--worktree")
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        f"avatar: --worktree: native session {plain} has no worktree"
    ]


def test_session_delete_worktree_never_throws_away_the_agents_uncommitted_work(
    repo: Path, avatar_env: dict[str, str], model_server: FakeModelServer
) -> None:
    model_server.chat.append(write_x("work"), Reply.text("done"))
    sid = session_id(chat(avatar_env, repo, "--worktree", "busy", "work"))
    place = worktree(repo, "busy")
    (place / "README").write_text("edited too\n")
    run = avatar(avatar_env, repo, "session", "delete", sid, "--yes", "--worktree")
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert lines == [
        f"avatar: --worktree: {place} holds work not committed (M README, ?? x.txt): commit it "
        f"on its branch (git -C {place} add -A && git -C {place} commit), or add --discard to "
        "throw it away; nothing was deleted"
    ]
    assert (place / "x.txt").read_text() == "work\n"  # nothing was deleted: the work,
    info = avatar(avatar_env, repo, "session", "info", sid, "--json")  # nor the session
    assert info.returncode == 0 and json.loads(info.stdout)["worktree"] == str(place)

    run = avatar(avatar_env, repo, "session", "delete", sid, "--yes", "--discard")
    assert run.returncode == 2 and "--discard goes with --worktree" in run.stderr
    run = avatar(avatar_env, repo, "session", "delete", sid, "--yes", "--worktree", "--discard")
    assert run.returncode == 0, run.stderr
    assert "threw away its work not committed (2)" in run.stderr
    assert not place.exists()


def test_a_worktree_has_the_submodules_of_the_checkout(
    repo: Path, avatar_env: dict[str, str], model_server: FakeModelServer, tmp_path: Path
) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q")
    (lib / "lib.txt").write_text("from the submodule\n")
    git(lib, "add", ".")
    git(lib, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "lib")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "lib")
    # The agent reads the submodule's file in its worktree.
    read = Reply.tool_call("bash", {"command": "cat lib/lib.txt > seen.txt"})
    model_server.chat.append(read, Reply.text("done"))
    run = chat(avatar_env, repo, "--worktree", "sm", "read it")
    assert run.returncode == 0, run.stderr
    assert (worktree(repo, "sm") / "seen.txt").read_text() == "from the submodule\n"
    # Committed, it goes without --discard (git itself wants --force for any submodule).
    git(worktree(repo, "sm"), "add", "seen.txt")
    git(worktree(repo, "sm"), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "s")
    sid = session_id(run)
    run = avatar(avatar_env, repo, "session", "delete", sid, "--yes", "--worktree")
    assert run.returncode == 0, run.stderr
    assert not worktree(repo, "sm").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--worktree", "taken", "hi"), "the name 'taken' is in use"),
        (("--worktree", "../up", "hi"), "not a worktree name"),
        (("--worktree", "x", "--resume", "abc", "hi"), "cannot go with --resume"),
    ],
    ids=["name-in-use", "bad-name", "with-resume"],
)
def test_bad_worktree_input_is_one_line_and_exit_2(
    repo: Path,
    avatar_env: dict[str, str],
    model_server: FakeModelServer,
    args: tuple[str, ...],
    said: str,
) -> None:
    git(repo, "branch", "avatar/taken")
    run = chat(avatar_env, repo, *args)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("avatar: --worktree") and said in lines[0]
    assert git(repo, "worktree", "list").count("\n") == 1  # nothing was made
    assert model_server.requests_for("chat") == []


def test_worktree_outside_a_repository_is_one_line_and_exit_2(
    agent_home: AgentHome, avatar_env: dict[str, str], tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    run = avatar(avatar_env, plain, "-p", "native", "chat", "--worktree", "x", "hi")
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        f"avatar: --worktree: {plain} is not in a git repository"
    ]


def test_repl_worktree_and_slash_worktree_run_sessions_in_worktrees(
    repo: Path, avatar_env: dict[str, str], model_server: FakeModelServer
) -> None:
    """`repl --worktree a` runs its first session in worktree `a`; `/worktree b` starts a
    fresh session in worktree `b`; each writes its own `x.txt`."""
    model_server.chat.append(*[tool_then_done(write_x)] * 4)
    lines = "in a\n/worktree b\nin b\n/quit\n"
    run = avatar(avatar_env, repo, "-p", "native", "repl", "--permission", "allow",
                 "--worktree", "a", stdin=lines)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert (worktree(repo, "a") / "x.txt").read_text() == "in a\n"
    assert (worktree(repo, "b") / "x.txt").read_text() == "in b\n"
    assert not (repo / "x.txt").exists()
    listed = json.loads(avatar(avatar_env, repo, "session", "list", "--json").stdout)
    assert sorted(s["worktree"] for s in listed) == [
        str(worktree(repo, "a")),
        str(worktree(repo, "b")),
    ]
    assert model_server.requests_for("chat")[-1].conversation_texts()[0] == "in b"  # fresh


def test_a_worktree_without_a_name_gets_one_and_avatar_c_into_it_keeps_it(
    repo: Path, avatar_env: dict[str, str], model_server: FakeModelServer
) -> None:
    model_server.chat.append(write_x("unnamed"), Reply.text("done"), "again")
    run = chat(avatar_env, repo, "go", "--worktree")
    assert run.returncode == 0, run.stderr
    made = list((repo / ".git" / "avatar" / "worktrees").iterdir())
    assert len(made) == 1 and made[0].name.startswith("wt-")
    assert f"worktree: {made[0].name} at {made[0]}" in run.stderr
    assert (made[0] / "x.txt").read_text() == "unnamed\n"
    # A session started with -C in an avatar worktree is that worktree's too.
    sid = session_id(avatar(avatar_env, repo, "-C", str(made[0]), "-p", "native", "chat", "again"))
    info = json.loads(avatar(avatar_env, repo, "session", "info", sid, "--json").stdout)
    assert info["worktree"] == info["cwd"] == str(made[0])
