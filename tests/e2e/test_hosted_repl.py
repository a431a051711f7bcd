"""A REPL's session is live on the running server while the REPL runs it in its own process:
`avatar ps` lists it, `avatar attach` reaches it (two real terminals in tmux, the native agent
against the fake model server). The attach screen shows the conversation so far and the turn
in progress; a prompt typed there runs in the REPL, after its own, on both screens; a
permission question of the REPL's agent is answered from the attached terminal (the file is
written, the REPL's menu withdrawn saying who answered); `/new` moves the listing to the new
session; the server stopping leaves the REPL working. Without a server, or with
`AVATAR_NO_SERVER=1`, the REPL connects to nothing and waits for nothing."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.drive import avatar
from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer, Reply
from tests.support.served import serving, socket_of
from tests.support.tmux import Terminal

pytestmark = [pytest.mark.timeout(240)]

ULID = r"[0-9A-HJKMNP-TV-Z]{26}"
MENU = r"\[y\] yes\s+\[a\] always"
TURN_END = r"─ \d+\.\ds"
NOBODY = 65534


def ps(env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
    """`avatar ps --json`."""
    proc = avatar(env, cwd, "ps", "--json")
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(proc.stdout))


def wait_ps(env: dict[str, str], cwd: Path, check: Any, timeout: float = 30) -> dict[str, Any]:
    """The one live session once `check(it)` holds."""
    deadline = time.monotonic() + timeout
    live: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        live = ps(env, cwd)
        if len(live) == 1 and check(live[0]):
            return live[0]
        time.sleep(0.1)
    raise AssertionError(f"avatar ps: {live}")


def test_a_repl_session_is_listed_attached_to_and_answered_from_attach(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(
        Reply.text("First answer from the REPL."),
        Reply.slow_text(["slowly ", "streaming ", "the ", "second ", "answer "] * 10, delay=0.25),
        Reply.text("Answer to the attached prompt."),
        Reply.tool_call("write", {"path": "hosted.txt", "content": "allowed from attach"}),
        Reply.text("Wrote hosted.txt."),
        Reply.slow_text(["a long ", "answer "] * 100, delay=0.2),
        Reply.text("Still answering alone."),
    )
    env, cwd = avatar_env(agent_home), agent_home.workdir
    repl_argv = ["avatar", "-p", "native", "repl"]
    with serving(env, cwd) as server, Terminal(repl_argv, env, cwd) as repl:
        repl.wait_for("avatar REPL")
        me = f"repl:{repl.pid()}"
        repl.type("first question")
        screen = repl.wait_for(rf"session: ({ULID}) \(native, new\)")
        sid = re.findall(rf"session: ({ULID})", screen)[0]
        repl.wait_for(TURN_END)
        info = wait_ps(env, cwd, lambda s: s["state"] == "idle")
        assert info["session_id"] == sid and info["provider"] == "native"
        assert info["clients"] == [me] and info["queued"] == 0
        assert info["project"] == str(cwd) and info["model"]
        # A slow turn of the REPL's own: ps says so; an attach now sees it streaming.
        repl.type("second question")
        wait_ps(env, cwd, lambda s: s["state"] == "turn")
        with Terminal(["avatar", "attach", sid[:12]], env, cwd) as att:
            screen = att.wait_for(r"slowly streaming")
            assert "› first question" in screen  # the conversation so far
            assert "First answer from the REPL." in screen
            assert f"({me}) second question" in screen  # the running turn, whose prompt
            attacher = f"attach:{att.pid()}"
            info = wait_ps(env, cwd, lambda s: len(s["clients"]) == 2)
            assert info["clients"] == [me, attacher]
            # Typed in attach during the REPL's turn: queued in the REPL, then run.
            att.type("third question from attach")
            repl.wait_for(rf"queued for after this turn: \({attacher}\) third question")
            assert wait_ps(env, cwd, lambda s: s["queued"] == 1)["state"] == "turn"
            att.wait_for("Answer to the attached prompt.", timeout=60)
            screen = repl.wait_for("Answer to the attached prompt.")
            assert f"› ({attacher}) third question from attach" in screen
            wait_ps(env, cwd, lambda s: s["state"] == "idle" and s["queued"] == 0)
            # The REPL's agent asks; the attached terminal answers.
            repl.type("write hosted.txt")
            att.wait_for(MENU)
            repl.wait_for(MENU)
            wait_ps(env, cwd, lambda s: s["state"] == "permission")
            att.keys("y")
            repl.wait_for(rf"\({attacher} answered allow\)")
            repl.wait_for("Wrote hosted.txt.")
            att.wait_for("Wrote hosted.txt.")
            wait_ps(env, cwd, lambda s: s["state"] == "idle")
            assert (cwd / "hosted.txt").read_text() == "allowed from attach"
            # The REPL's menu was withdrawn: no answer is waiting for it.
            assert "answer: y / a / n" not in repl.screen()
            # Ctrl-C in the attached terminal interrupts the REPL's turn.
            repl.type("a long one")
            att.wait_for(r"a long answer")
            att.keys("C-c")
            repl.wait_for(r"\(interrupted\)")
            wait_ps(env, cwd, lambda s: s["state"] == "idle")
        # /new: the listing follows to the new session.
        repl.type("/new")
        screen = repl.wait_for(rf"session: (?!{sid}){ULID} \(native, new\)")
        new = re.findall(rf"session: ({ULID}) \(native, new\)", screen)[-1]
        assert new != sid
        wait_ps(env, cwd, lambda s: s["session_id"] == new)
        # The server stops: the REPL says so once and goes on.
        assert avatar(env, cwd, "serve", "--stop").returncode == 0
        assert server.wait(15) == 0
        repl.wait_for(r"the server stopped: this session is no longer listed")
        repl.type("after the stop")
        screen = repl.wait_for("Still answering alone.")
        assert screen.count("the server stopped:") == 1


def _listener(path: Path) -> socket.socket:
    """A socket where the server's would be, that accepts nobody and reads nothing."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(4)
    return sock


def _repl_lines(env: dict[str, str], cwd: Path, text: str) -> str:
    proc = subprocess.run(
        ["avatar", "-p", "native", "repl"],
        input=text,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_without_a_server_the_repl_connects_to_nothing_and_waits_for_nothing(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(Reply.text("Alone."), Reply.text("Not listed."))
    env, cwd = avatar_env(agent_home), agent_home.workdir
    assert not socket_of(env).exists()
    out = _repl_lines(env, cwd, "hello\n")  # no socket: as before
    assert "Alone." in out
    # A server that hangs (it never reads): the REPL registers, and waits for nothing.
    stuck = _listener(socket_of(env))
    stuck.settimeout(0.5)
    try:
        # (The REPL has no timeout of its own here: had it waited, it would hang.)
        out = _repl_lines(env, cwd, "hello\n")
        assert "Not listed." in out
        conn, _ = stuck.accept()  # it did connect, and said what it hosts
        first = json.loads(conn.makefile("rb").readline())
        assert first["op"] == "host" and first["info"]["provider"] == "native"
        conn.close()
        # AVATAR_NO_SERVER=1: not even a connection.
        model_server.chat.append(Reply.text("Skipped."))
        out = _repl_lines({**env, "AVATAR_NO_SERVER": "1"}, cwd, "hello\n")
        assert "Skipped." in out
        with pytest.raises(TimeoutError):
            stuck.accept()
    finally:
        stuck.close()


_FOREIGN = """
import socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.bind(sys.argv[1])
sock.listen(4)
print("ready", flush=True)
sock.settimeout(20)
conn, _ = sock.accept()
conn.settimeout(5)
got = b""
try:
    while chunk := conn.recv(65536):
        got += chunk
except OSError:
    pass
print(repr(got), flush=True)
"""


@pytest.mark.skipif(os.getuid() != 0, reason="becoming another user needs root")
def test_a_socket_another_user_listens_on_is_told_nothing(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(Reply.text("Told nobody."))
    env, cwd = avatar_env(agent_home), agent_home.workdir
    runtime = Path(tempfile.mkdtemp(prefix="avatar-foreign-"))
    try:
        runtime.chmod(0o755)
        (runtime / "avatar").mkdir(mode=0o777)
        (runtime / "avatar").chmod(0o777)  # (someone else's way in: as a loosened /tmp dir)
        env = {**env, "XDG_RUNTIME_DIR": str(runtime)}
        foreign = subprocess.Popen(
            ["/usr/bin/python3", "-c", _FOREIGN, str(socket_of(env))],
            user=NOBODY,
            group=NOBODY,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert foreign.stdout is not None
        assert foreign.stdout.readline() == "ready\n"
        out = _repl_lines(env, cwd, "hello\n")
        assert "Told nobody." in out
        said, _ = foreign.communicate(timeout=30)
        assert said == "b''\n"  # it connected, saw whose socket it was, and left
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
