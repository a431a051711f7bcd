"""End to end: the installed `avatar -p native chat` against the fake model server."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.support import drive
from tests.support.model_server import FakeModelServer, Reply

SESSION_LINE = re.compile(r"^session: (\S+) \(native, (new|resumed|continued|forked)\)$", re.M)


def avatar(
    env: dict[str, str], cwd: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`avatar -p native ARGS`."""
    return drive.avatar(env, cwd, "-p", "native", *args, stdin=stdin)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


def test_chat_prints_answer_and_session_line(
    avatar_env: dict[str, str], project: Path, model_server: FakeModelServer
) -> None:
    out = avatar(avatar_env, project, "chat", "hi")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Hello from the fake LLM."
    match = SESSION_LINE.search(out.stderr)
    assert match and match.group(2) == "new"
    request = model_server.requests_for("chat")[0]
    assert request.last_user_text() == "hi" and request.model == "gpt-4o"


def test_chat_resume_continue_and_explicit_id(
    avatar_env: dict[str, str], project: Path, model_server: FakeModelServer
) -> None:
    model_server.script("chat", "first answer", "second answer", "third answer", "fourth")
    first = avatar(avatar_env, project, "chat", "my name is Ada")
    sid = SESSION_LINE.search(first.stderr).group(1)  # type: ignore[union-attr]
    resumed = avatar(avatar_env, project, "chat", "--resume", sid[:12], "what is my name?")
    assert resumed.returncode == 0, resumed.stderr
    assert f"session: {sid} (native, resumed)" in resumed.stderr
    assert "my name is Ada" in model_server.requests_for("chat")[-1].all_text()
    cont = avatar(avatar_env, project, "chat", "--continue", "and again?")
    assert f"session: {sid} (native, continued)" in cont.stderr
    assert "second answer" in model_server.requests_for("chat")[-1].all_text()
    chosen = avatar(avatar_env, project, "chat", "-s", "named-one", "hello")
    assert "session: named-one (native, new)" in chosen.stderr
    bad = avatar(avatar_env, project, "chat", "-s", "a/b", "hello")
    assert bad.returncode == 2 and bad.stderr.startswith("avatar: ")


def test_chat_tool_use_needs_permission(
    avatar_env: dict[str, str], project: Path, model_server: FakeModelServer
) -> None:
    write = Reply.tool_call("write", {"path": "note.txt", "content": "from the agent\n"})
    model_server.script("chat", write, "not allowed", write, "written")
    denied = avatar(avatar_env, project, "chat", "write a note")
    assert denied.returncode == 0 and not (project / "note.txt").exists()
    assert "--permission allow" in denied.stderr
    allowed = avatar(avatar_env, project, "chat", "--permission", "allow", "write a note")
    assert allowed.returncode == 0, allowed.stderr
    assert (project / "note.txt").read_text() == "from the agent\n"


def test_add_dir_lets_the_agent_write_beside_the_project(
    avatar_env: dict[str, str], project: Path, model_server: FakeModelServer
) -> None:
    other = project.parent / "lib"
    other.mkdir()
    write = Reply.tool_call("write", {"path": str(other / "out.txt"), "content": "shared\n"})
    model_server.script("chat", write, "refused", write, "written")
    without = avatar(avatar_env, project, "chat", "--permission", "allow", "write it")
    assert without.returncode == 0 and not (other / "out.txt").exists()
    with_dir = avatar(
        avatar_env, project, "chat", "--permission", "allow", "--add-dir", "../lib", "write it"
    )
    assert with_dir.returncode == 0, with_dir.stderr
    assert (other / "out.txt").read_text() == "shared\n"
    missing = avatar(avatar_env, project, "chat", "--add-dir", "../nope", "hi")
    assert missing.returncode == 2
    assert missing.stderr == "avatar: --add-dir: no such directory: ../nope\n"


def test_resuming_another_provider_s_session_is_a_usage_error(
    avatar_env: dict[str, str], project: Path, model_server: FakeModelServer
) -> None:
    first = avatar(avatar_env, project, "chat", "hello")
    sid = SESSION_LINE.search(first.stderr).group(1)  # type: ignore[union-attr]
    out = drive.avatar(avatar_env, project, "-p", "codex", "chat", "--resume", sid[:12], "go on")
    assert out.returncode == 2
    [line] = out.stderr.splitlines()
    assert f"session {sid} belongs to native" in line and f"--from {sid}" in line


def test_chat_json_events(
    avatar_env: dict[str, str], project: Path, model_server: FakeModelServer
) -> None:
    out = avatar(avatar_env, project, "chat", "--json", "hi")
    events = [json.loads(line) for line in out.stdout.splitlines()]
    assert all(e["v"] == 1 for e in events)
    types = [e["type"] for e in events]
    assert (
        types[0] == "session"
        and types[-1] == "turn_finished"
        and "text" in types
        and "usage" in types
    )


def test_chat_on_anthropic_model(
    avatar_env: dict[str, str], project: Path, model_server: FakeModelServer
) -> None:
    model_server.script("anthropic", "bonjour")
    out = avatar(avatar_env, project, "-m", "claude-sonnet-4-5", "chat", "hi")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "bonjour"
    assert model_server.requests_for("anthropic")[0].model == "claude-sonnet-4-5"


def test_session_list_shows_native_sessions(
    avatar_env: dict[str, str], project: Path, model_server: FakeModelServer
) -> None:
    avatar(avatar_env, project, "chat", "list me")
    out = drive.avatar(avatar_env, project, "session", "list", "--json", "--provider", "native")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert rows[0]["provider"] == "native" and rows[0]["title"] == "list me"
    assert rows[0]["messages"] == 2 and rows[0]["model"] == "openai/gpt-4o"


def test_unknown_model_is_a_usage_error(
    avatar_env: dict[str, str], project: Path, model_server: FakeModelServer
) -> None:
    out = avatar(avatar_env, project, "-m", "gpt-4p", "chat", "hi")
    assert out.returncode == 2
    assert out.stderr.startswith("avatar: unknown model 'gpt-4p'") and "gpt-4o" in out.stderr


def test_ctrl_c_interrupts_and_the_session_resumes(
    avatar_env: dict[str, str], project: Path, model_server: FakeModelServer
) -> None:
    import signal
    import time

    model_server.script(
        # 90 s of answer: only the interrupt ends the turn before the wait below gives up.
        "chat",
        Reply.slow_text(["one ", "two ", "three "], delay=30.0),
        "resumed ok",
    )
    proc = subprocess.Popen(
        ["avatar", "-p", "native", "chat", "count slowly"],
        env=avatar_env,
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    model_server.wait_for_request(api="chat", timeout=20)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    sid = SESSION_LINE.search(err).group(1)  # type: ignore[union-attr]
    again = avatar(avatar_env, project, "chat", "--resume", sid, "go on")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "resumed ok"
    assert "count slowly" in model_server.requests_for("chat")[-1].all_text()


def test_a_resumed_session_gets_its_preset_as_it_is_now_and_keeps_its_overrides(
    avatar_env: dict[str, str], project: Path, model_server: FakeModelServer
) -> None:
    """docs/design.md §4: a session records the preset it started from and only the settings that
    differ from it; resuming applies the preset as the config now defines it, then those."""
    config = Path(avatar_env["AVATAR_CONFIG"])

    def define(prompt: str) -> None:
        config.write_text(f"presets:\n  reviewer: {{system_prompt: {prompt}, permission: deny}}\n")

    define("FIRST-PRESET-PROMPT")
    write = Reply.tool_call("write", {"path": "note.txt", "content": "kept\n"})
    model_server.script("chat", "started", write, "written", "plain")
    started = avatar(
        avatar_env, project, "--preset", "reviewer", "chat", "--permission", "allow", "hello"
    )
    assert started.returncode == 0, started.stderr
    sid = SESSION_LINE.search(started.stderr).group(1)  # type: ignore[union-attr]
    assert "FIRST-PRESET-PROMPT" in model_server.requests_for("chat")[-1].system_text()

    define("SECOND-PRESET-PROMPT")  # the preset changes after the session started
    resumed = avatar(avatar_env, project, "chat", "--resume", sid, "write the note")
    assert resumed.returncode == 0, resumed.stderr
    system = model_server.requests_for("chat")[-1].system_text()
    assert "SECOND-PRESET-PROMPT" in system and "FIRST" not in system
    # Its own `--permission allow` survived the preset's `deny`: the write went through.
    assert (project / "note.txt").read_text() == "kept\n"

    # A session started without the preset is not given it.
    other = avatar(avatar_env, project, "chat", "plain")
    oid = SESSION_LINE.search(other.stderr).group(1)  # type: ignore[union-attr]
    model_server.script("chat", "again")
    avatar(avatar_env, project, "chat", "--resume", oid, "again")
    assert "PRESET-PROMPT" not in model_server.requests_for("chat")[-1].system_text()
