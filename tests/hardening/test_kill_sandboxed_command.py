"""Commands die with avatar (issue 20, acceptance 7): SIGKILL avatar while the native `bash` tool
runs a command that started background jobs, a subshell's job and a job in a session of its own;
within a few seconds not one of them is left.

Before the sandbox, 8 of 8 such kills left the command running.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.support.drive import start
from tests.support.homes import AgentHome
from tests.support.model_server import FakeModelServer, Reply

KILLS = 8
VARIANTS = [
    "sleep {t}1 & sleep {t}2",  # a background job and the foreground one
    "(sleep {t}1 &); sleep {t}2",  # a subshell's job, reparented at once
    "setsid sleep {t}1 & nohup sleep {t}2",  # a new session (its own process group), no hangup
]


def _running(token: str) -> list[int]:
    """Processes whose command line holds `token`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path("/proc", entry, "cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline:
            found.append(int(entry))
    return found


def _wait(predicate: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("round_", range(KILLS))
def test_sigkill_avatar_during_a_command_leaves_none_of_it(
    round_: int,
    agent_home: AgentHome,
    avatar_env: dict[str, str],
    model_server: FakeModelServer,
) -> None:
    token = f"{os.getpid() % 1000}{round_}7.5"  # e.g. `sleep 41237.51`: unique to this round
    command = VARIANTS[round_ % len(VARIANTS)].format(t=token)
    model_server.chat.append(Reply.tool_call("bash", {"command": command}), Reply.text("done"))
    proc = start(avatar_env, agent_home.workdir, "-p", "native", "chat", "--permission", "allow",
                 "go")  # fmt: skip
    try:
        assert _wait(lambda: len(_running(token)) >= 2, 30), "the command never started"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert _wait(lambda: not _running(token), 5), f"left running: {_running(token)}"
    finally:
        for pid in _running(token):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
