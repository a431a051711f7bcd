"""Concurrent prompts on one native session are queued on its file lock, not refused.

A second `chat --resume` (or a REPL) on a session another process has open waits, says so on
stderr, then runs its turn on top of the first; `--no-wait` fails at once with one line.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pexpect

from tests.hardening.support import json_lines, message_texts, session_file
from tests.support.drive import avatar, start
from tests.support.homes import AgentHome
from tests.support.model_server import FakeModelServer, RecordedRequest, Reply

AVATAR = shutil.which("avatar", path=str(Path(sys.executable).parent)) or "avatar"
WAITING = "notice: waiting for session shared-one (held by pid "


def _new_session(env: dict[str, str], cwd: Path, server: FakeModelServer) -> Path:
    server.chat.append(Reply.text("zero answer"))
    out = avatar(env, cwd, "-p", "native", "chat", "-s", "shared-one", "turn zero")
    assert out.returncode == 0, out.stderr
    return session_file(env, "shared-one")


def _held(gate: threading.Event, text: str) -> Callable[[RecordedRequest], Reply]:
    """A reply the server sends only once `gate` is set: the turn holds its session till then."""

    def answer(request: RecordedRequest) -> Reply:
        gate.wait(30)
        return Reply.text(text)

    return answer


def _hold_session(
    env: dict[str, str],
    home: AgentHome,
    server: FakeModelServer,
    answer: str,
    prompt: str = "turn one",
) -> tuple[Path, Path, threading.Event, subprocess.Popen[str]]:
    """A session `shared-one` with one turn, and a `chat --resume` of it that holds it, its
    answer (`answer`) held back until the returned gate is set."""
    cwd = home.workdir
    path = _new_session(env, cwd, server)
    gate = threading.Event()
    server.chat.append(_held(gate, answer))
    first = start(env, cwd, "-p", "native", "chat", "--resume", "shared-one", prompt)
    _wait_requests(server, 2)  # it holds the session and waits for its answer
    return cwd, path, gate, first


def _spawn(env: dict[str, str], cwd: Path, *args: str) -> pexpect.spawn:
    """`avatar -p native ARGS` in a pseudo-terminal (the REPL, or a chat to send Ctrl-C to)."""
    return pexpect.spawn(
        AVATAR,
        ["-p", "native", *args],
        cwd=str(cwd),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 200),
    )


def _wait_requests(server: FakeModelServer, count: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while len(server.requests_for("chat")) < count:
        assert time.monotonic() < deadline, "the model server never got the request"
        time.sleep(0.05)


def test_two_concurrent_chats_on_one_session_both_run_in_order(
    avatar_env: dict[str, str], agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    cwd = agent_home.workdir
    path = _new_session(avatar_env, cwd, model_server)
    gate = threading.Event()
    model_server.chat.append(_held(gate, "first answer"), Reply.text("second answer"))
    first = start(avatar_env, cwd, "-p", "native", "chat", "--resume", "shared-one", "turn one")
    _wait_requests(model_server, 2)  # the first holds the session and waits for its answer
    second = start(avatar_env, cwd, "-p", "native", "chat", "--resume", "shared", "turn two")
    assert second.stderr is not None
    notice = second.stderr.readline()
    assert notice.startswith(WAITING) and notice.endswith("; Ctrl-C to give up\n")
    gate.set()
    out1, err1 = first.communicate(timeout=60)
    out2, err2 = second.communicate(timeout=60)
    assert first.returncode == 0, err1
    assert second.returncode == 0, err2
    assert out1.strip() == "first answer" and out2.strip() == "second answer"
    assert "session: shared-one (native, resumed)" in err2
    # The second turn ran on top of the first: the model saw the first turn's answer.
    assert "first answer" in model_server.requests_for("chat")[-1].all_text()
    assert all(isinstance(e, dict) for e in json_lines(path))
    assert message_texts(path) == [
        ("user", "turn zero"),
        ("assistant", "zero answer"),
        ("user", "turn one"),
        ("assistant", "first answer"),
        ("user", "turn two"),
        ("assistant", "second answer"),
    ]


def test_no_wait_fails_at_once_with_one_line(
    avatar_env: dict[str, str], agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    cwd, path, gate, first = _hold_session(avatar_env, agent_home, model_server, "slow answer")
    refused = avatar(
        avatar_env, cwd, "-p", "native", "chat", "--no-wait", "--resume", "shared-one", "two"
    )
    gate.set()
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        "avatar: session shared-one is open in another avatar process "
        "(wait for it without --no-wait)"
    ]
    assert first.wait(timeout=60) == 0
    assert [t for _, t in message_texts(path)][-1] == "slow answer"


def test_ctrl_c_gives_up_waiting(
    avatar_env: dict[str, str], agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    cwd, path, gate, first = _hold_session(avatar_env, agent_home, model_server, "slow answer")
    waiter = _spawn(avatar_env, cwd, "chat", "--resume", "shared-one", "never sent")
    waiter.expect("waiting for session shared-one")
    waiter.sendintr()
    waiter.expect(pexpect.EOF)
    waiter.close()
    gate.set()
    assert waiter.exitstatus == 130
    assert first.wait(timeout=60) == 0
    assert "never sent" not in [t for _, t in message_texts(path)]


def test_chat_waits_for_a_repl_holding_the_session(
    avatar_env: dict[str, str], agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    cwd = agent_home.workdir
    path = _new_session(avatar_env, cwd, model_server)
    model_server.chat.append(Reply.text("repl answer"), Reply.text("chat answer"))
    repl = _spawn(avatar_env, cwd, "repl", "--resume", "shared-one")
    repl.expect("avatar REPL")
    repl.sendline("from the repl")
    repl.expect("repl answer")
    waiting = start(avatar_env, cwd, "-p", "native", "chat", "--resume", "shared-one", "from chat")
    assert waiting.stderr is not None
    assert WAITING in waiting.stderr.readline()  # the first thing it says: it waits
    assert waiting.poll() is None  # still queued behind the REPL
    repl.sendline("/quit")
    repl.expect(pexpect.EOF)
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    assert out.strip() == "chat answer"
    assert all(isinstance(e, dict) for e in json_lines(path))
    assert [t for _, t in message_texts(path)][2:] == [
        "from the repl",
        "repl answer",
        "from chat",
        "chat answer",
    ]


def test_repl_waits_for_a_chat_holding_the_session(
    avatar_env: dict[str, str], agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    cwd, path, gate, first = _hold_session(
        avatar_env, agent_home, model_server, "chat answer", "from chat"
    )
    model_server.chat.append(Reply.text("repl answer"))
    repl = _spawn(avatar_env, cwd, "repl", "--resume", "shared-one")
    repl.expect("waiting for session shared-one")
    gate.set()
    repl.expect("avatar REPL")
    assert first.wait(timeout=60) == 0
    repl.sendline("from the repl")
    repl.expect("repl answer")
    repl.sendline("/quit")
    repl.expect(pexpect.EOF)
    assert [t for _, t in message_texts(path)][2:] == [
        "from chat",
        "chat answer",
        "from the repl",
        "repl answer",
    ]
