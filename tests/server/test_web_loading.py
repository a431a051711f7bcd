"""`avatar serve --web` as a command: the web page's framework loads only with `--web` (issue
24), read from the server's own `-X importtime` log (PYTHONPROFILEIMPORTTIME) while it really
runs; `--port` without `--web`, or a port taken, is one line and exit 2, and no server starts;
an open page keeps `--idle-exit` from ending the server."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.integration.test_acp_cli import write_fake_provider
from tests.support.drive import avatar
from tests.support.homes import AgentHome, avatar_env
from tests.support.served import alive, socket_of, terminate
from tests.support.web import web_server

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


def test_port_without_web_and_a_port_taken_are_one_line_each(agent_home: AgentHome) -> None:
    env = avatar_env(agent_home)
    alone = avatar(env, agent_home.workdir, "serve", "--port", "8765")
    assert (alone.returncode, alone.stderr) == (
        2,
        "avatar: --port is the web page's: use it with --web\n",
    )
    assert not socket_of(env).exists()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = avatar(env, agent_home.workdir, "serve", "--web", "--port", str(port))
    assert busy.returncode == 2
    assert busy.stderr == f"avatar: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    assert not socket_of(env).exists()


def test_an_open_page_keeps_idle_exit_from_ending_the_server(agent_home: AgentHome) -> None:
    write_fake_provider(agent_home)
    env = avatar_env(agent_home)
    with web_server(env, agent_home.workdir, "--idle-exit", "2s") as served:
        with httpx.Client(base_url=served.base, timeout=30) as client:
            client.get(served.url)  # (the token becomes the cookie)
            opened = client.post("/live/open", data={"provider": "fake"})
            assert opened.status_code == 303, opened.text
            chat = opened.headers["location"]
            with client.stream("GET", f"{chat}/events") as events:
                assert events.status_code == 200
                time.sleep(5)  # an open page: more than twice the idle time
                assert alive(served.pid), "the server ended under an open page"
            began = time.monotonic()
            while alive(served.pid) and time.monotonic() - began < 20:
                time.sleep(0.1)
        assert not alive(served.pid), "the server did not end once the page closed"
        assert time.monotonic() - began >= 1.5  # (the idle time counts from the page's close)
