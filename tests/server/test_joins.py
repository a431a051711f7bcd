"""Joins that keep answers apart (docs/design.md §11, issue 32), through a real `avatar serve`
on the fake ACP agent: `chat --resume ID` joining a live session mid-turn prints only its own
turn's answer; a chat joined to a session an answering client holds (a page, a terminal)
answers its own permission questions by its own `--permission`, as without a server; a turn
another client interrupts says who did."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_acp_cli import write_fake_provider
from tests.support.drive import SESSION_LINE, avatar, start
from tests.support.homes import AgentHome
from tests.support.served import serving, socket_of
from tests.support.waiting import wait_until

pytestmark = pytest.mark.timeout(240)


def _ps(env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
    return list(json.loads(avatar(env, cwd, "ps", "--json").stdout))


def _session(env: dict[str, str], cwd: Path) -> str:
    """A session of the fake agent, made without the server."""
    first = avatar({**env, "AVATAR_NO_SERVER": "1"}, cwd, "-p", "fake", "chat", "begin")
    [(sid, _, _)] = SESSION_LINE.findall(first.stderr)
    return sid


class Client:
    """A client attached on the socket that answers permission questions (as the web page
    does) but never does: it only watches."""

    def __init__(self, path: Path, ref: str, name: str = "page") -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))
        self.send({"op": "attach", "ref": ref, "client": name})
        self.reader = self.sock.makefile("rb")
        self.first = json.loads(self.reader.readline())

    def send(self, frame: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps(frame).encode() + b"\n")

    def close(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


def test_chats_joining_mid_turn_print_only_their_own_answers(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    write_fake_provider(agent_home, load=True, chunk_delay=0.4, chunks=6)
    env, cwd = avatar_env, agent_home.workdir
    sid = _session(env, cwd)
    with serving(env, cwd):
        first = start(env, cwd, "-p", "fake", "chat", "--resume", sid, "the first one")
        wait_until(lambda: [s["state"] for s in _ps(env, cwd)] == ["turn"])
        joiners = [
            start(env, cwd, "-p", "fake", "chat", "--resume", sid, f"joiner {n}") for n in range(4)
        ]
        done = [(proc, *proc.communicate(timeout=180)) for proc in [first, *joiners]]
    for n, (proc, out, err) in enumerate(done):
        assert proc.returncode == 0, err
        mine = "the first one" if n == 0 else f"joiner {n - 1}"
        assert out.startswith("reply "), out
        assert out.count("reply ") == 1, out  # one answer: its own, nobody else's
        assert f"to '{mine}'" in out, out
        [(said, _, how)] = SESSION_LINE.findall(err)
        assert said == sid and how == "loaded"  # (joined or not: as a resume alone says it)


def test_a_chat_joined_to_a_session_a_page_holds_answers_by_its_own_rule(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    write_fake_provider(agent_home, load=True, permission=True, chunk_delay=0.5)
    env, cwd = avatar_env, agent_home.workdir
    sid = _session(env, cwd)
    cold = avatar({**env, "AVATAR_NO_SERVER": "1"}, cwd, "-p", "fake", "chat", "--resume", sid, "x")
    with serving(env, cwd):
        keeper = start(env, cwd, "-p", "fake", "chat", "--resume", sid, "keep it open")
        wait_until(lambda: [s["state"] for s in _ps(env, cwd)] == ["turn"])
        page = Client(socket_of(env), sid)  # it can answer, and does not
        assert "ok" in page.first
        keeper.communicate(timeout=60)
        asks = start(env, cwd, "-p", "fake", "chat", "--resume", sid, "may I")
        out, err = asks.communicate(timeout=60)  # (it hung here, waiting for the page)
        allowed = avatar(
            env, cwd, "-p", "fake", "chat", "--permission", "allow", "--resume", sid, "and now?"
        )
        page.close()
    assert asks.returncode == 0, err
    assert "[permission: no]" in out
    # Said as without a server.
    notice = [line for line in cold.stderr.splitlines() if "nobody can answer" in line]
    assert notice and notice[0] in err.splitlines()
    assert allowed.returncode == 0, allowed.stderr
    assert "[permission: yes]" in allowed.stdout


def test_a_turn_another_client_interrupts_says_who(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    write_fake_provider(agent_home, load=True, chunk_delay=1.0, chunks=20)
    env, cwd = avatar_env, agent_home.workdir
    sid = _session(env, cwd)
    with serving(env, cwd):
        chat = start(env, cwd, "-p", "fake", "chat", "--resume", sid, "take your time")
        wait_until(lambda: [s["state"] for s in _ps(env, cwd)] == ["turn"])
        other = Client(socket_of(env), sid, "attach:4242")
        other.send({"op": "cancel"})
        _, err = chat.communicate(timeout=60)
        other.close()
    assert chat.returncode == 130, err
    assert "notice: attach:4242 interrupted this turn" in err.splitlines()
