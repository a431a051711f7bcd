"""The web page's framework loads only for `avatar serve --web` (issue 24): `avatar serve`
without it runs the same server and never imports Starlette or uvicorn. Read from the
server's own `-X importtime` log (PYTHONPROFILEIMPORTTIME) while it really runs."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.homes import AgentHome, avatar_env
from tests.support.served import socket_of, terminate

AVATAR = shutil.which("avatar", path=str(Path(sys.executable).parent)) or "avatar"
FRAMEWORK = ("starlette", "uvicorn")


def imported_while_serving(home: AgentHome, *args: str) -> set[str]:
    """The top-level names of every module `avatar serve ARGS` imported until it listened."""
    env = avatar_env(home, PYTHONPROFILEIMPORTTIME="1")
    log = home.root / "imports.log"
    with log.open("w") as errors:
        proc = subprocess.Popen(
            [AVATAR, "serve", *args],
            env=env,
            cwd=home.workdir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
        try:
            deadline = time.monotonic() + 30
            while not socket_of(env).exists():
                assert proc.poll() is None, log.read_text()[-2000:]
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.02)
            time.sleep(0.3)  # (the web page starts before the socket: it is up by now)
        finally:
            terminate(proc)
            proc.wait(20)
    return {
        line.split("|")[-1].strip().partition(".")[0]
        for line in log.read_text().splitlines()
        if line.startswith("import time:") and "|" in line
    }


@pytest.mark.parametrize("web", [False, True], ids=["serve", "serve --web"])
def test_the_framework_loads_only_for_the_web_page(agent_home: AgentHome, web: bool) -> None:
    names = imported_while_serving(agent_home, *(["--web"] if web else []))
    assert "avatar" in names and "asyncio" in names  # the log is the server's
    loaded = {name for name in FRAMEWORK if name in names}
    assert loaded == (set(FRAMEWORK) if web else set())
