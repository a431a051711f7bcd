"""Live sessions through the server (issue 24, acceptance 1), with the real codex-acp against
the fake model server: `avatar serve` in the background, then on one session, from three
processes, a `chat --resume` that is answered slowly, an `avatar attach` in a real terminal
(tmux) that sees the turn in progress, a second `chat --resume` whose prompt queues, and a
prompt typed in the attached REPL. Every prompt is answered in order on one conversation (the
model sees each earlier turn), each chat prints its own answer and exits 0, the attached
terminal shows all three turns, a watcher on the socket saw every event each chat saw, `avatar
ps` shows the session in a turn and then idle, and `serve --stop` leaves no process behind."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.drive import SESSION_LINE, avatar, start
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, RecordedRequest, Reply
from tests.support.served import alive, command_line, descendants, serving, socket_of
from tests.support.tmux import Terminal
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PROMPTS = ("first prompt", "second prompt", "third prompt")


def _answer(request: RecordedRequest) -> Reply:
    """A slow answer naming the prompt it answers (so the order shows in every output)."""
    said = request.last_user_text()
    name = next((p for p in PROMPTS if p in said), "the start")
    return Reply.slow_text(["answer ", "to ", f"{name}."], delay=1.5)


class Watcher:
    """A client on the socket that records every event of one live session."""

    def __init__(self, path: Path, ref: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))
        self.sock.sendall(json.dumps({"op": "attach", "ref": ref, "client": "watcher"}).encode())
        self.sock.sendall(b"\n")
        self.reader = self.sock.makefile("rb")
        self.first = json.loads(self.reader.readline())
        self.events: list[dict[str, Any]] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        for line in self.reader:
            self.events.append(json.loads(line)["event"])

    def turn_of(self, client_pid: int) -> list[dict[str, Any]]:
        """The agent's events of the turn the chat with this pid asked for."""
        out: list[dict[str, Any]] = []
        inside = False
        for event in self.events:
            if event["type"] == "turn_started":
                inside = event["client"] == f"chat:{client_pid}"
            elif event["type"] == "turn_ended":
                inside = False
            elif inside and not event["type"].startswith("permission_"):
                out.append(event)
        return out

    def close(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)  # (its reader thread holds the socket too)
        self.sock.close()


def _ps(env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
    proc = avatar(env, cwd, "ps", "--json")
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(proc.stdout))


def test_three_processes_on_one_live_session(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    model_server.script("responses", *[_answer] * 8)
    env, cwd = avatar_env(agent_home), agent_home.workdir
    first = avatar(env, cwd, "-p", "codex", "chat", "start here", timeout=120)
    assert first.returncode == 0, first.stderr
    [(sid, _, _)] = SESSION_LINE.findall(first.stderr)

    with serving(env, cwd) as server:
        chat_a = start(env, cwd, "-p", "codex", "chat", "--json", "--resume", sid, PROMPTS[0])
        wait_until(lambda: [s["state"] for s in _ps(env, cwd)] == ["turn"])  # busy
        watcher = Watcher(socket_of(env), sid)
        with Terminal(["avatar", "attach", sid[:12]], env, cwd) as term:
            term.wait_for(r"answer", timeout=60)  # the turn in progress
            chat_b = start(env, cwd, "-p", "codex", "chat", "--json", "--resume", sid, PROMPTS[1])
            wait_until(lambda: _ps(env, cwd)[0]["queued"] == 1)
            term.type(PROMPTS[2])
            wait_until(lambda: _ps(env, cwd)[0]["queued"] == 2)
            out_a, err_a = chat_a.communicate(timeout=120)
            out_b, err_b = chat_b.communicate(timeout=120)
            assert chat_a.returncode == 0, err_a
            assert chat_b.returncode == 0, err_b
            screen = term.wait_for(r"answer to third prompt\.", timeout=120)
            live = _ps(env, cwd)
            assert [s["state"] for s in live] == ["idle"]  # then idle
            assert live[0]["session_id"] == sid
            assert sorted(live[0]["clients"]) == sorted([f"attach:{term.pid()}", "watcher"])
            term.keys("C-d")
            wait_until(term.dead)
        watcher.close()
        # Its last client gone, the session is kept loaded, without clients (server.kept).
        wait_until(lambda: [s["clients"] for s in _ps(env, cwd)] == [[]])
        # Each chat printed its own turn (after what opening the session said): the events the
        # watcher saw of it, in order.
        for proc, out in ((chat_a, out_a), (chat_b, out_b)):
            printed = [json.loads(line) for line in out.splitlines()]
            turn = watcher.turn_of(proc.pid)
            assert turn and printed[-len(turn) :] == turn
        texts = {
            n: "".join(e.get("text", "") for e in watcher.turn_of(p.pid) if e["type"] == "text")
            for n, p in (("a", chat_a), ("b", chat_b))
        }
        assert texts == {"a": "answer to first prompt.", "b": "answer to second prompt."}
        # The attached terminal showed the three turns in order, the other clients' prompts too.
        at = [screen.find(f"answer to {p}.") for p in PROMPTS]
        assert -1 not in at and at == sorted(at), screen
        assert f"(chat:{chat_b.pid}) {PROMPTS[1]}" in screen
        # One conversation: each prompt reached the model after the ones before it.
        mains = [r for r in model_server.requests_for("responses") if r.is_main]
        said = [r.last_user_text() for r in mains]
        order = [next(i for i, s in enumerate(said) if p in s) for p in PROMPTS]
        assert order == sorted(order)
        assert all(p in mains[order[2]].all_text() for p in PROMPTS[:2])
        helpers = descendants(server.pid)  # (the agent kept warm for the next session too)
        assert any("codex" in command_line(pid) for pid in helpers)
        stopped = avatar(env, cwd, "serve", "--stop")
        assert stopped.returncode == 0, stopped.stderr
        assert server.wait(15) == 0
    left = [(pid, command_line(pid)) for pid in helpers if alive(pid)]
    assert helpers and not left  # its helpers ended with it
