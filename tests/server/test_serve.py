"""`avatar serve` as a user runs it (docs/design.md §11), on the fake ACP agent: one server per user
on a private socket (0600 in a 0700 directory, another user refused even where the modes would let
them in, nothing on TCP); `--stop`, SIGTERM and `--idle-exit` end it with every agent it started;
`chat` and the session listings print through it exactly what they print without it, and a
chat through it loads neither the ACP SDK nor pydantic (nor click)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.integration.test_acp_cli import write_fake_provider
from tests.support.acp_agent import provider_entry
from tests.support.drive import avatar, start
from tests.support.homes import AgentHome
from tests.support.served import (
    alive,
    command_line,
    descendants,
    processes_with,
    serving,
    socket_inodes,
    socket_of,
    tcp_listening_inodes,
    terminate,
)
from tests.support.waiting import wait_until

pytestmark = pytest.mark.timeout(120)
NOBODY = 65534
#: A turn that runs ~10 s unless cancelled, and stops within half a second when it is: long
#: enough for a loaded machine's `ps` to see it running, short to cancel.
_LONG_TURN = {"chunk_delay": 0.5, "chunks": 20}


def _as_nobody_connect(path: Path) -> str:
    """Connect to `path` from a child process running as `nobody`; what it got."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: another user
        os.close(read)
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(10)
            sock.connect(str(path))
            got = b""  # (the server speaks first to a user it refuses, then hangs up)
            while chunk := sock.recv(4096):
                got += chunk
            said = "answered: " + got.decode()
        except OSError as e:
            said = f"refused: {type(e).__name__}"
        os.write(write, said.encode())
        os._exit(0)
    os.close(write)
    said = b""
    while chunk := os.read(read, 4096):
        said += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return said.decode()


@pytest.mark.skipif(os.getuid() != 0, reason="becoming another user needs root")
def test_the_socket_is_private_and_other_users_are_refused(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    # (a runtime dir right under /tmp: the test's own tmp_path is closed to others anyway)
    avatar_env = {**avatar_env, "XDG_RUNTIME_DIR": tempfile.mkdtemp(prefix="avatar-run-")}
    path = socket_of(avatar_env)
    with serving(avatar_env, agent_home.workdir) as server:
        assert path.stat().st_mode & 0o777 == 0o600
        assert path.parent.stat().st_mode & 0o777 == 0o700
        assert _as_nobody_connect(path) == "refused: PermissionError"
        # Where the modes let another user through, the server itself refuses them.
        path.parent.parent.chmod(0o711)
        path.parent.chmod(0o711)
        path.chmod(0o666)
        said = _as_nobody_connect(path)
        assert said.startswith("answered: "), said
        assert json.loads(said.removeprefix("answered: ")) == {
            "error": "this server is another user's",
            "exit": 2,
        }
        assert not socket_inodes(server.pid) & tcp_listening_inodes()  # nothing on TCP
    shutil.rmtree(path.parent.parent)


def test_one_server_per_user(agent_home: AgentHome, avatar_env: dict[str, str]) -> None:
    with serving(avatar_env, agent_home.workdir) as server:
        second = avatar(avatar_env, agent_home.workdir, "serve")
        assert second.returncode == 1
        assert second.stderr == (
            f"avatar: a server runs already (pid {server.pid}, {socket_of(avatar_env)})\n"
        )
        assert server.poll() is None


def test_stop_ends_the_server_and_every_agent_it_started(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    write_fake_provider(agent_home, **_LONG_TURN)
    state = str(agent_home.root / "fake-state")
    with serving(avatar_env, agent_home.workdir) as server:
        chat = start(avatar_env, agent_home.workdir, "-p", "fake", "chat", "take your time")

        def in_a_turn() -> bool:
            ps = avatar(avatar_env, agent_home.workdir, "ps", "--json")
            return [s["state"] for s in json.loads(ps.stdout)] == ["turn"]

        wait_until(in_a_turn)
        agents = processes_with(state)
        assert agents, "the fake agent runs"
        helpers = descendants(server.pid)  # (the agent, its walls' stub, the guard)
        stopped = avatar(avatar_env, agent_home.workdir, "serve", "--stop")
        # Nothing the server started runs once `--stop` says it stopped (not only once the
        # server's process has exited: its guard used to outlive it by a moment).
        assert not [(pid, command_line(pid)) for pid in helpers if alive(pid)]
        # It returns once the server has ended, not when the pid is reaped: this test, its
        # parent, has not waited for it yet, so it is still there, ended (a zombie).
        assert Path(f"/proc/{server.pid}/stat").read_text().split(") ")[1][0] == "Z"
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stderr == f"stopped the server (pid {server.pid})\n"
        assert server.wait(10) == 0
        assert not any(alive(pid) for pid in agents)
        assert processes_with(state) == []
        assert not socket_of(avatar_env).exists()
        chat.wait(10)
    assert avatar(avatar_env, agent_home.workdir, "serve", "--stop").stderr == (
        "avatar: no server is running\n"
    )


def test_sigterm_and_idle_exit_end_it_cleanly(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    write_fake_provider(agent_home)
    with serving(avatar_env, agent_home.workdir) as server:
        assert avatar(avatar_env, agent_home.workdir, "-p", "fake", "chat", "hi").returncode == 0
        terminate(server)
        assert server.wait(10) == 0
        assert not socket_of(avatar_env).exists()
    with serving(avatar_env, agent_home.workdir, "--idle-exit", "2s") as server:
        began = time.monotonic()
        done = avatar(avatar_env, agent_home.workdir, "-p", "fake", "chat", "hi")
        assert done.returncode == 0
        assert server.wait(15) == 0  # two seconds after the chat ended, it ended itself
        assert time.monotonic() - began >= 2
        assert processes_with(str(agent_home.root / "fake-state")) == []


def _same(text: str) -> str:
    """Output with session ids and ages made comparable."""
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<id>", text)
    return re.sub(r"\d+[smhd] ago|just now", "<age>", text)


def test_chat_and_listings_print_the_same_through_the_server(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    write_fake_provider(agent_home, rich=True)
    config_file = agent_home.root / "avatar-config.yaml"
    config = json.loads(config_file.read_text())
    config["providers"]["broken"] = provider_entry(agent_home.root / "broken", new_error=-32603)
    config_file.write_text(json.dumps(config))
    cold_env = {**avatar_env, "AVATAR_NO_SERVER": "1"}
    cwd = agent_home.workdir
    runs = [
        ("-p", "fake", "chat", "hello"),
        ("-p", "fake", "chat", "--json", "hello"),
        ("-p", "fake", "chat", "--permission", "nope", "hello"),
        ("-p", "nope", "chat", "hello"),
        ("-p", "broken", "chat", "hello"),
    ]
    cold = [avatar(cold_env, cwd, *args) for args in runs]
    ids = re.findall(r"session: (\S+)", cold[0].stderr)
    listings = [("session", "list"), ("session", "list", "--json"), ("session", "show", ids[0])]
    cold += [avatar(cold_env, cwd, *args) for args in listings]
    with serving(avatar_env, cwd):
        warm = [avatar(avatar_env, cwd, *args) for args in runs]
        warm_ids = re.findall(r"session: (\S+)", warm[0].stderr)
        warm += [avatar(avatar_env, cwd, *args) for args in listings[:2]]
        warm.append(avatar(avatar_env, cwd, "session", "show", warm_ids[0]))
    for before, after in zip(cold, warm, strict=True):
        assert after.returncode == before.returncode, after.args
        assert _same(after.stdout).count("<id>") >= _same(before.stdout).count("<id>")
        if "list" in after.args:  # the served run listed the cold runs' sessions too
            continue
        assert _same(after.stdout) == _same(before.stdout), after.args
        assert _same(after.stderr) == _same(before.stderr), after.args
    assert "reply 1 to 'hello'" in warm[0].stdout


def test_a_chat_through_the_server_loads_no_sdk_pydantic_or_click(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    write_fake_provider(agent_home)
    code = (
        "import sys\n"
        "from avatar.cli import main\n"
        "try:\n    main(sys.argv[1:])\n"
        "except SystemExit as e:\n    code = e.code\n"
        "heavy = ('acp', 'pydantic', 'click', 'rich', 'prompt_toolkit', 'yaml')\n"
        "print('LOADED', sorted(m for m in heavy if m in sys.modules))\n"
    )
    with serving(avatar_env, agent_home.workdir):
        for args in (["-p", "fake", "chat", "hello"], ["session", "list"], ["ps"]):
            proc = subprocess.run(
                [sys.executable, "-c", code, *args],
                capture_output=True,
                text=True,
                env=avatar_env,
                cwd=agent_home.workdir,
                timeout=60,
            )
            assert "LOADED []" in proc.stdout, (args, proc.stdout, proc.stderr)
    cold = subprocess.run(
        [sys.executable, "-c", code, "-p", "fake", "chat", "hello"],
        capture_output=True,
        text=True,
        env=avatar_env,
        cwd=agent_home.workdir,
        timeout=60,
    )
    # (alone, it reads the config's YAML itself: the check sees what loads)
    assert "reply 1 to 'hello'" in cold.stdout and "'yaml'" in cold.stdout


def test_ctrl_c_on_a_chat_through_the_server_cancels_its_turn(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    write_fake_provider(agent_home, **_LONG_TURN)
    cwd = agent_home.workdir
    with serving(avatar_env, cwd):
        chat = start(avatar_env, cwd, "-p", "fake", "chat", "take your time")
        requests = agent_home.root / "fake-state" / "requests.jsonl"
        wait_until(
            lambda: (
                [s["state"] for s in json.loads(avatar(avatar_env, cwd, "ps", "--json").stdout)]
                == ["turn"]
            )
        )
        # The prompt has reached the agent (a cancel before that ends the turn without it:
        # tests/integration/test_cancel_early.py).
        wait_until(lambda: requests.exists() and '"session/prompt"' in requests.read_text())
        chat.send_signal(signal.SIGINT)
        _, err = chat.communicate(timeout=30)
        assert chat.returncode == 130, err  # as without a server
        assert '"session/cancel"' in requests.read_text()  # the agent was told to stop
        wait_until(  # the chat has left it (it is kept loaded, without clients)
            lambda: (
                [
                    (s["clients"], s["state"])
                    for s in json.loads(avatar(avatar_env, cwd, "ps", "--json").stdout)
                ]
                == [([], "idle")]
            )
        )
        again = avatar(avatar_env, cwd, "-p", "fake", "chat", "still there?")
        assert again.returncode == 0 and "reply 1 to 'still there?'" in again.stdout


def test_a_live_session_is_not_deleted_under_its_clients(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    """`session delete` (which runs in the client) asks the server first: a session live there
    is refused in one line and stays; once its clients left, it is deleted."""
    write_fake_provider(agent_home, chunk_delay=1.0)
    cwd = agent_home.workdir

    def live() -> list[dict[str, object]]:
        return list(json.loads(avatar(avatar_env, cwd, "ps", "--json").stdout))

    with serving(avatar_env, cwd):
        chat = start(avatar_env, cwd, "-p", "fake", "chat", "take your time")
        wait_until(lambda: [s["state"] for s in live()] == ["turn"])
        session = str(live()[0]["session_id"])
        refused = avatar(avatar_env, cwd, "session", "delete", "--yes", "--forget", session)
        assert refused.returncode == 1
        assert refused.stderr == (
            f"avatar: fake session {session} is live in the running server (avatar ps): "
            "delete it once its clients have left\n"
        )
        assert session in avatar(avatar_env, cwd, "session", "list", "--all").stdout
        chat.communicate(timeout=30)
        assert chat.returncode == 0
        wait_until(lambda: [s["clients"] for s in live()] == [[]])  # (kept, without clients)
        done = avatar(avatar_env, cwd, "session", "delete", "--yes", "--forget", session)
        assert done.returncode == 0, done.stderr
        assert session not in avatar(avatar_env, cwd, "session", "list", "--all").stdout
