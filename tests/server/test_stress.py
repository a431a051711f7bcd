"""The server under stress never leaves a client hanging (docs/design.md §11, issue 32's
acceptance), a real `avatar serve` with four fake ACP agents:

- a live session whose agent raises inside a turn: that client gets one error line and a
  non-zero exit, and the session goes on (another client's prompt sent to it at the same
  moment is answered);
- then 20 clients on the 4 agents for 2 minutes, two on each session, resuming it turn after
  turn, while agents are killed in between: every command gets its own answer (never the
  other client's) or one error line, none waits past its timeout, and every answered turn is
  in its session's transcript (the agent's own store), each client's in order.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support import served_load
from tests.support.acp_agent import provider_entry
from tests.support.drive import SESSION_LINE, avatar
from tests.support.homes import AgentHome
from tests.support.served import processes_with, serving

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

AGENTS = 4
CLIENTS = 20
#: Seconds the clients keep sending.
DURATION = 120.0
#: Seconds a client waits for a command's answer.
TIMEOUT = 90.0
#: Seconds between two kills of an agent.
KILL_EVERY = 7.0


@dataclass
class Client:
    """One client's commands: its session, the turns answered, what it got."""

    number: int
    agent: str
    session: str | None = None
    answered: list[str] = field(default_factory=list)
    answers: list[tuple[str, served_load.Answer]] = field(default_factory=list)


def _error_lines(answer: served_load.Answer) -> list[str]:
    """What the client printed on stderr but the session line and notices (an agent killed
    between the chat's open and its prompt is said, its restart a notice, then the turn runs:
    the chat still exits 1, as without a server)."""
    return [
        line
        for line in answer.err.splitlines()
        if not SESSION_LINE.match(line) and not line.startswith("notice: ")
    ]


def _session(answer: served_load.Answer) -> str | None:
    found = SESSION_LINE.search(answer.err)
    return found.group(1) if found else None


def _transcript(state: Path, session: str) -> list[str]:
    """The prompts the agent holds for `session`, in order."""
    data = json.loads((state / "sessions" / f"{session}.json").read_text())
    return [m["text"] for m in data["history"] if m["role"] == "user"]


def _together(*commands: Callable[[], served_load.Answer]) -> list[served_load.Answer]:
    """Run `commands` at the same moment, each as a client of its own; their answers."""
    got: list[served_load.Answer] = [served_load.Answer() for _ in commands]

    def one(i: int) -> None:
        got[i] = commands[i]()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(commands))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return got


def test_a_raising_agent_then_twenty_clients_on_four_agents_with_kills(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    env, cwd = avatar_env, agent_home.workdir
    states = {f"agent{i}": agent_home.root / f"state{i}" for i in range(AGENTS)}
    providers = {
        name: provider_entry(state, load=True, raise_on="explode", chunk_delay=0.3)
        for name, state in states.items()
    }
    (agent_home.root / "avatar-config.yaml").write_text(json.dumps({"providers": providers}))

    def chat(agent: str, prompt: str, session: str | None = None) -> served_load.Answer:
        """`avatar -p AGENT chat [--resume SESSION] PROMPT`, a client process of its own (the
        server tells its clients apart by their process)."""
        resume = ["--resume", session] if session else []
        try:
            done = avatar(env, cwd, "-p", agent, "chat", *resume, prompt, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            return served_load.Answer(timed_out=True)
        return served_load.Answer(done.stdout, done.stderr, done.returncode)

    with serving(env, cwd):
        # A live session whose agent raises inside a turn while another client's prompt
        # waits on it: that turn is one error line, the other is answered.
        opened = chat("agent0", "hello")
        session = _session(opened)
        assert opened.code == 0 and session is not None, opened
        raised, after = _together(
            lambda: chat("agent0", "please explode", session),
            lambda: chat("agent0", "and now?", session),
        )
        assert not raised.timed_out and raised.code not in (0, None), raised
        assert len(_error_lines(raised)) == 1, raised.err
        assert "explode" not in after.out and after.out.count("reply ") == 1, after
        assert after.code == 0 and "to 'and now?'" in after.out, after

        # Two clients on each session, a session of its own for each pair.
        pairs = CLIENTS // 2
        clients = [Client(n, f"agent{n % pairs % AGENTS}") for n in range(CLIENTS)]
        for first, second in zip(clients[:pairs], clients[pairs:], strict=True):
            got = chat(first.agent, f"the session of clients {first.number}, {second.number}")
            assert got.code == 0, got
            first.session = second.session = _session(got)
        deadline = time.monotonic() + DURATION
        stop = threading.Event()
        killed: list[str] = []

        def drive(client: Client) -> None:
            turn = 0
            while time.monotonic() < deadline:
                turn += 1
                prompt = f"client {client.number} turn {turn}"
                got = chat(client.agent, prompt, client.session)
                client.answers.append((prompt, got))
                if got.code == 0:
                    client.answered.append(prompt)

        def kill() -> None:
            n = 0
            while not stop.wait(KILL_EVERY):
                agent = f"agent{n % AGENTS}"
                n += 1
                for pid in processes_with(str(states[agent]))[:1]:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        continue
                    killed.append(agent)

        threads = [threading.Thread(target=drive, args=(c,)) for c in clients]
        killer = threading.Thread(target=kill)
        for thread in [*threads, killer]:
            thread.start()
        for thread in threads:
            thread.join(DURATION + 2 * TIMEOUT)
        stop.set()
        killer.join()
        assert not any(t.is_alive() for t in threads), "a client never got an answer"

    assert killed, "no agent was killed"
    for client in clients:
        for prompt, got in client.answers:
            assert not got.timed_out, (prompt, got)
            if got.code == 0:  # its own answer, and only its own (never the other client's)
                assert f"to '{prompt}'" in got.out and got.out.count("reply ") == 1, (prompt, got)
            else:
                said = _error_lines(got)
                assert got.code is not None and len(said) == 1, (prompt, got)
                assert said[0].startswith("avatar: "), (prompt, got)
        assert client.answered, f"client {client.number} never got an answer"
        assert client.session is not None
        held = _transcript(states[client.agent], client.session)
        # Every answered turn is there, in order (a turn whose client got an error may be
        # there too: the agent can finish it just as it is killed).
        assert [p for p in held if p in client.answered] == client.answered, client.number
