"""Rewind for every agent (issue 33): the real native agent, Claude Code, claude-agent-acp,
codex-acp and Gemini CLI against the fake model server, in `avatar repl` fed line by line. The agent
edits one file with its own edit tool in one turn and, in the next, rewrites another and adds a
third with a shell command; `/rewind` to before the first of those turns puts every file back
byte for byte (the added ones gone), and the next prompt's request holds the turn before them
and not the rewound turns. `avatar session rewind` does the same for scripts.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.drive import avatar
from tests.support.homes import AgentHome, avatar_env, persistent_tmpdir, require_bridges
from tests.support.model_server import FakeModelServer, RecordedRequest, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

AVATAR = shutil.which("avatar", path=str(Path(sys.executable).parent)) or "avatar"
# What the files hold before the agent touches them: bytes a careless restore would change.
A_BEFORE = b"alpha\r\nold-one\r\n"
B_BEFORE = b"beta \xff\x00 bytes\n"
SHELL = "printf 'SHELLTEXT-3\\n' > b.txt && mkdir -p made/deep && echo x > made/deep/c.txt"
PROMPTS = (
    "remember the word APPLE-7",
    "please CHANGE-ONE in a.txt",
    "please RUN-SHELL-3 on b.txt",
    "what do you remember? BANANA-9",
)


def _edit(provider: str, a: Path) -> list[Reply]:
    """The model's calls that edit `a` with the agent's own edit tool, then its answer."""
    new = "NEWTEXT-2"
    calls = {
        "native": [Reply.tool_call("edit", {"path": "a.txt", "old_text": "old-one",
                                            "new_text": new})],
        "claude-acp": [Reply.tool_call("Read", {"file_path": str(a)}),
                       Reply.tool_call("Edit", {"file_path": str(a), "old_string": "old-one",
                                                "new_string": new})],
        "claude": [Reply.tool_call("Read", {"file_path": str(a)}),
                   Reply.tool_call("Edit", {"file_path": str(a), "old_string": "old-one",
                                            "new_string": new})],
        "codex": [Reply.tool_call("exec_command", {"cmd": (
            f"apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: {a}\n@@\n alpha\r\n"
            f"-old-one\r\n+{new}\r\n*** End Patch\nEOF\n")})],
        "gemini": [Reply.tool_call("replace", {"file_path": str(a), "old_string": "old-one",
                                               "new_string": new, "instruction": "edit"})],
    }  # fmt: skip
    return [*calls[provider], Reply.text("Edited a.txt.")]


def _shell(provider: str) -> list[Reply]:
    """The model's shell call that rewrites b.txt and adds made/deep/c.txt, then its answer."""
    calls = {
        "native": Reply.tool_call("bash", {"command": SHELL}),
        "claude": Reply.tool_call("Bash", {"command": SHELL, "description": "rewrite"}),
        "claude-acp": Reply.tool_call("Bash", {"command": SHELL, "description": "rewrite"}),
        "codex": Reply.tool_call("exec_command", {"cmd": SHELL}),
        "gemini": Reply.tool_call("run_shell_command", {"command": SHELL}),
    }
    return [calls[provider], Reply.text("Ran it.")]


API = {"native": "chat", "claude": "anthropic", "claude-acp": "anthropic", "codex": "responses",
       "gemini": "gemini"}  # fmt: skip


@pytest.fixture
def case(request: pytest.FixtureRequest, tmp_path: Path, model_server: FakeModelServer
         ) -> Iterator[tuple[str, AgentHome]]:  # fmt: skip
    """(provider, a home whose project holds a.txt and b.txt)."""
    provider = str(request.param)
    if provider != "native":
        bins = {"claude": "claude", "claude-acp": "claude-agent-acp", "codex": "codex-acp"}
        require_bridges(bins.get(provider, provider))
    with persistent_tmpdir() as codex_home:  # codex runs its tools only off /tmp
        made = AgentHome(
            tmp_path / "agent",
            model_server,
            codex_home=codex_home / ".codex",
            codex_sandbox="danger-full-access",
        )
        subprocess.run(["git", "init", "-q", str(made.workdir)], check=True)
        (made.workdir / "a.txt").write_bytes(A_BEFORE)
        (made.workdir / "b.txt").write_bytes(B_BEFORE)
        yield provider, made


def _script(server: FakeModelServer, provider: str, a: Path) -> None:
    replies = [Reply.text("Noted APPLE-7."), *_edit(provider, a), *_shell(provider)]
    if provider != "claude-acp":
        server.script(API[provider], *replies)  # type: ignore[arg-type]
        return
    # claude-agent-acp asks the model for a prompt suggestion after each turn: such a request
    # gets the default reply, not the next scripted one.
    left = deque(replies)

    def answer(request: RecordedRequest) -> Reply:
        if "[SUGGESTION MODE" in request.last_user_text() or not left:
            return server.default_reply
        return left.popleft()

    server.script("anthropic", *[answer] * 20)


def _rewound(server: FakeModelServer, provider: str, work: Path) -> None:
    """Every file as before the two turns; the last request without them."""
    assert (work / "a.txt").read_bytes() == A_BEFORE
    assert (work / "b.txt").read_bytes() == B_BEFORE
    assert not (work / "made").exists()
    last = [r for r in server.requests_for(API[provider]) if r.is_main][-1].all_text()  # type: ignore[arg-type]
    assert "BANANA-9" in last and "APPLE-7" in last
    for gone in ("CHANGE-ONE", "RUN-SHELL-3", "NEWTEXT-2", "SHELLTEXT-3"):
        assert gone not in last, gone


@pytest.mark.parametrize(
    "case", ["native", "claude", "claude-acp", "codex", "gemini"], indirect=True
)
def test_slash_rewind_restores_files_and_conversation(
    case: tuple[str, AgentHome], model_server: FakeModelServer
) -> None:
    provider, home = case
    work = home.workdir
    _script(model_server, provider, work / "a.txt")
    lines = [*PROMPTS[:3], "/rewind 2", PROMPTS[3], "/quit"]
    run = subprocess.run(
        [AVATAR, "-p", provider, "repl", "--permission", "allow"],
        input="\n".join(lines) + "\n",
        env=avatar_env(home),
        cwd=work,
        capture_output=True,
        text=True,
        timeout=360,
    )
    out = run.stdout + run.stderr
    print(out)
    assert run.returncode == 0, out
    assert "SHELLTEXT-3" not in (work / "b.txt").read_text(errors="replace"), out
    assert re.search(r"rewind: 2 files restored, 1 removed", out), out
    _rewound(model_server, provider, work)


def _turns(env: dict[str, str], work: Path, provider: str, prompts: tuple[str, ...]
           ) -> str:  # fmt: skip
    """Run `prompts` as turns of one new session (chat, then --resume); its id."""
    first = avatar(env, work, "-p", provider, "chat", "--permission", "allow", prompts[0])
    assert first.returncode == 0, first.stderr
    found = re.search(r"session: (\S+) \(", first.stderr)
    assert found, first.stderr
    sid = found.group(1)
    for prompt in prompts[1:]:
        run = avatar(env, work, "-p", provider, "chat", "--permission", "allow",
                     "--resume", sid, prompt)  # fmt: skip
        assert run.returncode == 0, run.stderr
    return sid


@pytest.mark.parametrize("case", ["native", "claude"], indirect=True)
def test_session_rewind_for_scripts(
    case: tuple[str, AgentHome], model_server: FakeModelServer
) -> None:
    provider, home = case
    work, env = home.workdir, avatar_env(home)
    _script(model_server, provider, work / "a.txt")
    sid = _turns(env, work, provider, PROMPTS[:3])
    listed = avatar(env, work, "session", "rewind", sid)
    assert listed.returncode == 0, listed.stderr
    rows = listed.stdout.splitlines()
    assert len(rows) == 3 and "APPLE-7" in rows[0] and "no file changed" in rows[0], rows
    assert "CHANGE-ONE" in rows[1] and "a.txt +1 -1" in rows[1]
    assert "b.txt (binary), made/deep/c.txt (new)" in rows[2]  # (it held a NUL before)
    bad = avatar(env, work, "session", "rewind", sid, "--to", "9")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert bad.stderr.startswith("avatar: no turn 9"), bad.stderr
    run = avatar(env, work, "session", "rewind", sid, "--to", "2")
    assert run.returncode == 0, run.stderr
    new = run.stdout.strip()
    assert new and new != sid and "\n" not in new
    assert "notice: rewind: 2 files restored, 1 removed" in run.stderr
    after = avatar(env, work, "-p", provider, "chat", "--resume", new, PROMPTS[3])
    assert after.returncode == 0, after.stderr
    _rewound(model_server, provider, work)


@pytest.mark.parametrize("case", ["native", "claude"], indirect=True)
def test_an_agent_cannot_write_avatars_checkpoint_store(
    case: tuple[str, AgentHome], model_server: FakeModelServer
) -> None:
    """The store is avatar's: a walled shell (the native agent's `bash`, Claude Code's own
    Bash) can neither plant a config its git would run nor a checkpoint it would restore."""
    provider, home = case
    env = avatar_env(home)
    store = Path(env["AVATAR_HOME"]) / "rewind"
    planted = "[core]\n\tfsmonitor = touch FSMONITOR-RAN\n"
    attack = (
        f"for c in {store}/projects/*/git/config; do printf '{planted}' >> $c; done; "
        f"echo x > {store}/planted; echo done"
    )
    tool = {"native": ("bash", {"command": attack}),
            "claude": ("Bash", {"command": attack, "description": "plant"})}[provider]  # fmt: skip
    model_server.script(API[provider], Reply.tool_call(*tool), Reply.text("Planted."))  # type: ignore[arg-type]
    first = avatar(env, home.workdir, "-p", provider, "chat", "--permission", "allow", "plant it")
    assert first.returncode == 0, first.stderr
    [config] = store.glob("projects/*/git/config")
    assert "fsmonitor = false" in config.read_text() and "FSMONITOR-RAN" not in config.read_text()
    assert not (store / "planted").exists()
    shown = [r for r in model_server.requests_for(API[provider]) if r.is_main][-1].all_text()  # type: ignore[arg-type]
    assert "Read-only file system" in shown or "Permission denied" in shown, shown


def test_a_store_agents_could_write_records_nothing(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    """AVATAR_HOME inside the project: the turn runs, one notice says why nothing is recorded,
    and no store is made where an agent could write it."""
    inside = agent_home.workdir / ".avatar-home"
    env = avatar_env(agent_home, avatar_home=inside)
    run = avatar(env, agent_home.workdir, "-p", "native", "chat", "hello")
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("which agents may write: files are not recorded") == 1, run.stderr
    assert not (inside / "rewind" / "projects").exists()


@pytest.mark.parametrize("case", ["native"], indirect=True)
def test_files_alone_or_the_conversation_alone(
    case: tuple[str, AgentHome], model_server: FakeModelServer
) -> None:
    provider, home = case
    work = home.workdir
    _script(model_server, provider, work / "a.txt")
    lines = [*PROMPTS[:3], "/rewind 3 --files", "/rewind 2 --conversation", PROMPTS[3], "/quit"]
    run = subprocess.run(
        [AVATAR, "-p", provider, "repl", "--permission", "allow"],
        input="\n".join(lines) + "\n",
        env=avatar_env(home),
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    # --files: the shell's turn undone, the edit before it kept, the session the same.
    assert (work / "b.txt").read_bytes() == B_BEFORE and not (work / "made").exists()
    assert b"NEWTEXT-2" in (work / "a.txt").read_bytes()
    assert "rewind: 1 file restored, 1 removed" in run.stdout
    # --conversation: the files as they are, the conversation before turn 2.
    assert run.stdout.count("(native, forked)") == 1
    last = [r for r in model_server.requests_for("chat") if r.is_main][-1].all_text()
    assert "APPLE-7" in last and "CHANGE-ONE" not in last and "BANANA-9" in last
