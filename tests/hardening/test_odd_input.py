"""Odd input neither hangs avatar nor ends a turn: a lone surrogate in the model's text, a NUL
byte in a command, a FIFO in the project. Each runs the installed `avatar -p native chat`
against the fake model server and checks what the user and the model get."""

from __future__ import annotations

import os

from tests.hardening.support import message_texts, session_file
from tests.support.drive import SESSION_LINE, avatar
from tests.support.homes import AgentHome
from tests.support.model_server import FakeModelServer, Reply


def _tool_results(server: FakeModelServer) -> list[str]:
    """The text of the tool result each request after the first carried (the last message)."""
    out = []
    for request in server.requests_for("chat")[1:]:
        last = request.messages()[-1]
        assert last.role == "tool", last
        out.append(last.text)
    return out


def test_a_lone_surrogate_in_the_model_s_text_is_kept_escaped_and_shown(
    avatar_env: dict[str, str], agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    project = agent_home.workdir  # (the test's AVATAR_HOME is beside it, not inside)
    model_server.chat.append(Reply.text("odd \ud800 char"))
    out = avatar(avatar_env, project, "-p", "native", "chat", "hi")
    assert (out.returncode, out.stdout) == (0, "odd \\ud800 char\n"), out.stderr
    found = SESSION_LINE.search(out.stderr)
    assert found is not None
    sid = found.group(1)
    assert message_texts(session_file(avatar_env, sid))[-1] == ("assistant", "odd \\ud800 char")
    shown = avatar(avatar_env, project, "-p", "native", "session", "show", sid)
    assert shown.returncode == 0 and "odd \\ud800 char" in shown.stdout


def test_a_nul_byte_in_a_command_is_a_tool_error_the_model_reads(
    avatar_env: dict[str, str], agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    project = agent_home.workdir  # (the test's AVATAR_HOME is beside it, not inside)
    model_server.chat.append(
        Reply.tool_call("bash", {"command": "echo a\x00b > made.txt"}), Reply.text("noted")
    )
    out = avatar(avatar_env, project, "-p", "native", "chat", "--permission", "allow", "run it")
    assert (out.returncode, out.stdout) == (0, "noted\n"), out.stderr
    [result] = _tool_results(model_server)
    assert "NUL" in result
    assert not (project / "made.txt").exists()


def test_a_fifo_in_the_project_is_never_opened(
    avatar_env: dict[str, str], agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    project = agent_home.workdir  # (the test's AVATAR_HOME is beside it, not inside)
    """A FIFO blocks whoever opens it until a writer comes: avatar would hang for good."""
    os.mkfifo(project / "pipe")
    (project / "notes.txt").write_text("a needle here\n")
    model_server.chat.append(
        Reply.tool_call("read", {"path": "pipe"}),
        Reply.tool_call("grep", {"pattern": "needle"}),
        Reply.tool_call("find", {"pattern": "*"}),
        Reply.tool_call("ls", {}),
        Reply.tool_call("edit", {"path": "pipe", "old_text": "a", "new_text": "b"}),
        Reply.tool_call("write", {"path": "pipe", "content": "x"}),
        Reply.text("looked"),
    )
    out = avatar(
        avatar_env, project, "-p", "native", "chat", "--permission", "allow", "look", timeout=60
    )
    assert (out.returncode, out.stdout) == (0, "looked\n"), out.stderr
    read, grep, find, ls, edit, write = _tool_results(model_server)
    assert read == "pipe is a FIFO (named pipe), not a regular file"
    assert grep == "notes.txt:1: a needle here"  # the FIFO is passed over
    assert sorted(find.splitlines()) == ["notes.txt", "pipe"]
    assert sorted(ls.splitlines()) == ["notes.txt", "pipe"]
    assert edit == write == "pipe is a FIFO (named pipe), not a regular file"
    assert (project / "pipe").is_fifo()
