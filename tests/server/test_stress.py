"""The server under stress never leaves a client hanging (docs/design.md §11, issue 32's
acceptance), a real `avatar serve` with four fake ACP agents:

- a live session whose agent raises inside a turn: that client gets one error line and a
  non-zero exit, and the session goes on (the next prompt on it is answered);
- then 20 clients on the 4 agents for 2 minutes, each opening a session and resuming it turn
  after turn, while agents are killed in between: every command gets an answer or one error
  line, none waits past its timeout, and every answered turn is in its session's transcript
  (the agent's own store), in order.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support import served_load
from tests.support.acp_agent import provider_entry
from tests.support.drive import SESSION_LINE
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


def test_a_raising_agent_then_twenty_clients_on_four_agents_with_kills(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    env, cwd = avatar_env, agent_home.workdir
    states = {f"agent{i}": agent_home.root / f"state{i}" for i in range(AGENTS)}
    providers = {
        name: provider_entry(state, load=True, raise_on="explode", chunk_delay=0.05)
        for name, state in states.items()
    }
    (agent_home.root / "avatar-config.yaml").write_text(json.dumps({"providers": providers}))

    with serving(env, cwd):
        # A turn the agent raises in: one error line; the session takes the next prompt.
        raised = served_load.run(env, cwd, "-p", "agent0", "chat", "please explode", timeout=60)
        assert raised.code not in (0, None) and not raised.timed_out, raised
        assert len(_error_lines(raised)) == 1, raised.err
        session = _session(raised)
        assert session is not None, raised.err
        after = served_load.run(
            env, cwd, "-p", "agent0", "chat", "--resume", session, "and now?", timeout=60
        )
        assert after.code == 0, after
        assert "to 'and now?'" in after.out

        clients = [Client(n, f"agent{n % AGENTS}") for n in range(CLIENTS)]
        deadline = time.monotonic() + DURATION
        stop = threading.Event()
        killed: list[str] = []

        def drive(client: Client) -> None:
            turn = 0
            while time.monotonic() < deadline:
                turn += 1
                prompt = f"client {client.number} turn {turn}"
                argv = ["-p", client.agent, "chat"]
                if client.session is not None:
                    argv += ["--resume", client.session]
                got = served_load.run(env, cwd, *argv, prompt, timeout=TIMEOUT)
                client.answers.append((prompt, got))
                if got.code == 0:
                    client.session = client.session or _session(got)
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
            if got.code == 0:
                assert f"to '{prompt}'" in got.out, (prompt, got)
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
