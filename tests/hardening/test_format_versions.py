"""Versioned native session files: a newer version is refused, an older one migrated on read.

`fixtures/v0-session.jsonl` is the shape before headers carried a version (see
`avatar.native.store.versions`); it must read, resume, list and fork like a current file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from avatar.native.store.manager import SessionManager
from avatar.native.store.reading import read_state
from avatar.native.store.versions import NewerFormatError
from tests.hardening.support import json_lines, message_texts, session_file
from tests.support.drive import avatar
from tests.support.homes import AgentHome
from tests.support.model_server import FakeModelServer, Reply

FIXTURE = Path(__file__).parent / "fixtures" / "v0-session.jsonl"


def _install(env: dict[str, str], cwd: Path, text: str, sid: str) -> Path:
    """Put a session file where the native store keeps `cwd`'s sessions."""
    directory = SessionManager(Path(env["AVATAR_HOME"])).project_dir(cwd)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{sid}.jsonl"
    path.write_text(text.replace("CWD", str(cwd)))
    return path


def test_a_v0_file_is_migrated_on_read(tmp_path: Path) -> None:
    path = tmp_path / "old-format-one.jsonl"
    path.write_text(FIXTURE.read_text().replace("CWD", str(tmp_path)))
    state = read_state(path)
    assert state.header.id == "old-format-one" and state.header.created.startswith("2025-01-02")
    assert state.message_count == 2 and not state.warnings
    assert [m.text for m in state.messages] == ["remember the heron", "I will remember the heron."]


def test_a_v0_session_resumes_lists_and_forks(
    avatar_env: dict[str, str], agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    cwd = agent_home.workdir
    original = FIXTURE.read_text().replace("CWD", str(cwd))
    path = _install(avatar_env, cwd, FIXTURE.read_text(), "old-format-one")
    listed = avatar(avatar_env, cwd, "session", "list", "--provider", "native", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [(r["id"], r["messages"]) for r in rows] == [("old-format-one", 2)]
    model_server.chat.append(Reply.text("A heron."))
    out = avatar(avatar_env, cwd, "-p", "native", "chat", "--resume", "old-format", "what bird?")
    assert out.returncode == 0, out.stderr
    assert "remember the heron" in model_server.requests_for("chat")[-1].all_text()
    assert path.read_text().startswith(original)  # the old lines are left as they were
    assert [t for _, t in message_texts(path)][-2:] == ["what bird?", "A heron."]
    forked = avatar(avatar_env, cwd, "session", "fork", "old-format-one")
    assert forked.returncode == 0, forked.stderr
    fork_id = forked.stdout.split()[-1] if forked.stdout.strip() else forked.stderr.split()[-1]
    fork_lines = json_lines(session_file(avatar_env, fork_id.strip("()")))
    assert fork_lines[0]["version"] == 1
    texts = [e["text"] for e in fork_lines[1:] if e["type"] == "message"]
    assert texts[:2] == ["remember the heron", "I will remember the heron."]


def test_a_newer_version_is_refused_with_one_line(
    avatar_env: dict[str, str], agent_home: AgentHome, tmp_path: Path
) -> None:
    cwd = agent_home.workdir
    header = {"type": "session", "version": 99, "id": "from-the-future", "cwd": str(cwd)}
    entry = {"type": "hologram", "id": "x", "timestamp": "2031-01-01T00:00:00Z"}
    text = json.dumps(header) + "\n" + json.dumps(entry) + "\n"
    path = _install(avatar_env, cwd, text, "from-the-future")
    with pytest.raises(NewerFormatError, match="format version 99"):
        read_state(path)
    out = avatar(avatar_env, cwd, "-p", "native", "chat", "--resume", "from-the-future", "hi")
    assert out.returncode == 1
    assert out.stderr.splitlines() == [
        "avatar: session from-the-future was written by a newer avatar (format version 99; "
        "this avatar reads up to 1): upgrade avatar to open it"
    ]
    assert path.read_text() == text  # nothing appended to a file this avatar cannot write
    listed = avatar(avatar_env, cwd, "session", "list", "--provider", "native", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [r["id"] for r in json.loads(listed.stdout)] == ["from-the-future"]
    shown = avatar(avatar_env, cwd, "session", "show", "from-the-future")
    assert shown.returncode == 1 and shown.stderr.count("\n") == 1
    assert "newer avatar" in shown.stderr
