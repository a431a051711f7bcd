"""A REPL whose terminal goes away ends as on a hang-up (129, through the same cancel that
stops its agent): by the SIGHUP the kernel sends its controlling terminal's session, and also
where none comes (the terminal was not its controlling one: a failed write is the sign).
Before, a redraw on the dead terminal fed prompt-toolkit's error handler for ever, which asked
for Enter on it: an orphan avatar spinning one core and growing by gigabytes."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

AVATAR = str(Path(sys.executable).parent / "avatar")


def _read_until(fd: int, needle: bytes, timeout: float) -> bytes:
    seen = b""
    end = time.monotonic() + timeout
    while needle not in seen:
        left = end - time.monotonic()
        assert left > 0, f"never saw {needle!r} in:\n{seen.decode(errors='replace')[-2000:]}"
        if select.select([fd], [], [], left)[0]:
            seen += os.read(fd, 65536)
    return seen


def test_a_repl_whose_terminal_goes_away_mid_turn_ends(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(Reply.slow_text(["still ", "going "] * 100, delay=0.1))
    master, slave = pty.openpty()
    os.set_inheritable(slave, True)
    env = avatar_env(agent_home, TERM="xterm-256color", COLUMNS="100", LINES="30")
    env.pop("NO_COLOR", None)
    # Its own session, the pty not its controlling terminal: closing the pty sends it no
    # SIGHUP, so only the failed writes can tell it the terminal is gone.
    proc = subprocess.Popen(
        [AVATAR, "-p", "native", "repl"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=agent_home.workdir,
        start_new_session=True,
    )
    os.close(slave)
    try:
        _read_until(master, "›".encode(), 30)
        os.write(master, b"tell me a long story\r")
        _read_until(master, b"still going", 30)  # (the turn streams: the screen redraws)
        os.close(master)
        try:
            code = proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail("avatar still ran 20 s after its terminal went away")
        assert code == 129  # as a hang-up ends it
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
