"""`avatar attach` in a real terminal (tmux), on a session live in the server, with the fake
ACP agent that asks permission on every prompt (issue 24): a question asked during another
client's turn shows in the attached REPL as the menu and is answered there with one key (the
agent reads the answer); one answered from another client withdraws the menu, saying who
answered; a chat's question is answered by the chat's own --permission (issue 32)."""

from __future__ import annotations

import json
import re
import socket

import pytest

from tests.integration.test_acp_cli import write_fake_provider
from tests.support.drive import SESSION_LINE, avatar, start
from tests.support.homes import AgentHome
from tests.support.served import serving, socket_of
from tests.support.tmux import Terminal

pytestmark = [pytest.mark.timeout(180)]

MENU = r"\[y\] yes\s+\[a\] always"


def _client(path: object, ref: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(path))
    sock.sendall(json.dumps({"op": "attach", "ref": ref, "client": "other"}).encode() + b"\n")
    return sock


def test_a_permission_question_is_answered_in_the_attached_repl_or_elsewhere(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    write_fake_provider(agent_home, permission=True, chunk_delay=0.3)
    env, cwd = avatar_env, agent_home.workdir
    first = avatar({**env, "AVATAR_NO_SERVER": "1"}, cwd, "-p", "fake", "chat", "begin")
    [(sid, _, _)] = SESSION_LINE.findall(first.stderr)
    with serving(env, cwd):
        # A chat makes the session live, and another client on the socket keeps it so.
        keeper = start(env, cwd, "-p", "fake", "chat", "--resume", sid, "keep it open")
        for _ in range(300):
            live = json.loads(avatar(env, cwd, "ps", "--json").stdout)
            if live:
                break
        sid = live[0]["session_id"]  # (the fake agent cannot resume: a new session opened)
        other = _client(socket_of(env), sid)
        reader = other.makefile("rb")
        assert "ok" in json.loads(reader.readline())
        with Terminal(["avatar", "attach", sid], env, cwd) as term:
            # The keeper's turn, streamed here. Its question was denied at once if it came
            # before `other` attached (nobody could answer); after, it waits for an answer.
            screen = term.wait_for(rf"\[permission: no\]|{MENU}")
            if "[permission: no]" not in screen:
                term.keys("n")
                term.wait_for(r"\[permission: no\]")
            term.keys("C-l")  # (a clear screen: the menus below are the next questions')
            term.wait_gone(r"keep it open")
            # A chat answers its own questions by its own --permission, as without a server
            # (it never waits for a terminal that may not be looking): no menu here.
            chat = start(env, cwd, "-p", "fake", "chat", "--resume", sid, "may I")
            out, err = chat.communicate(timeout=60)
            assert chat.returncode == 0, err
            assert "[permission: no]" in out and "nobody can answer" in err
            term.wait_for(r"reply \d+ to 'may I' .*\[permission: no\]")
            # The question of another client that can answer comes here as the menu.
            other.sendall(json.dumps({"op": "prompt", "text": "me too?"}).encode() + b"\n")
            term.wait_for(MENU)
            term.keys("y")
            term.wait_for(r"→ allowed", timeout=10)  # the menu says what was answered
            term.wait_for(r"reply \d+ to 'me too\?' .*\[permission: yes\]")  # the agent got it
            # Answered from another client: the menu here is withdrawn, saying who answered.
            term.type("and again")
            asked, prompt = None, None
            for line in reader:  # the question of the turn typed here
                event = json.loads(line)["event"]
                if event["type"] == "turn_started":
                    prompt = event["prompt"]
                elif event["type"] == "permission_asked" and prompt == "and again":
                    asked = event["id"]
                    break
            term.wait_for(MENU)
            other.sendall(json.dumps({"op": "answer", "id": asked, "answer": "deny"}).encode())
            other.sendall(b"\n")
            screen = term.wait_for(r"other answered deny")
            screen = term.wait_for(r"reply \d+ to 'and again' .*\[permission: no\]")
            assert re.search(r"reply \d+ to 'me too\?' .*\[permission: yes\]", screen), screen
        keeper.wait(30)
        other.close()
