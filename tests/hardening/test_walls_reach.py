"""Nothing inside the walls reaches what is outside them (issue 30): a command the native `bash`
tool runs — a real `avatar chat` on the native agent against the fake model server — cannot
sign with the user's ssh-agent by its socket's path (unless `scope.sockets` opens it), cannot
talk to avatar's own server (a real `avatar serve`), cannot push keystrokes into avatar's
terminal with TIOCSTI (as root: we are root here), and reaches the network only as
`scope.network` says. A private temp dir an avatar killed mid-command left behind is removed
when the next one starts, and without a C compiler to build the stub the door still stands
and says so.

Each test reads what the command printed (the tool's result, as the model was shown it) and
what happened outside (the pty's input queue, the listener's backlog, the temp dir).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import termios
import time
import tty
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.drive import avatar, start
from tests.support.homes import AgentHome
from tests.support.model_server import FakeModelServer, Reply
from tests.support.served import serving, socket_of


@pytest.fixture
def project(agent_home: AgentHome) -> Path:
    return agent_home.workdir


def _bash(
    env: dict[str, str], project: Path, server: FakeModelServer, command: str, **run: object
) -> str:
    """Run `command` through the native `bash` tool; what the model was shown."""
    server.chat.append(Reply.tool_call("bash", {"command": command}), Reply.text("done"))
    argv = ["avatar", "-p", "native", "chat", "--permission", "allow", "go"]
    done = subprocess.run(
        argv, env=env, cwd=project, capture_output=True, text=True, timeout=90, **run
    )
    assert done.returncode == 0, done.stderr
    result: str = server.requests_for("chat")[-1].json()["messages"][-1]["content"]
    return result


def _python(code: str) -> str:
    """A shell line running `code` with the interpreter running this test."""
    return f"{sys.executable} -c '{code}'; echo rc=$?"


@pytest.fixture
def ssh_agent() -> Iterator[str]:
    """A real ssh-agent (its socket where ssh-agent puts it, /tmp/ssh-*/agent.PID), holding no
    key; stopped afterwards."""
    assert shutil.which("ssh-agent"), "ssh-agent is needed (openssh-client)"
    out = subprocess.run(["ssh-agent", "-s"], capture_output=True, text=True, check=True).stdout
    sock = re.search(r"SSH_AUTH_SOCK=([^;]+);", out)
    pid = re.search(r"SSH_AGENT_PID=(\d+);", out)
    assert sock and pid, out
    try:
        yield sock.group(1)
    finally:
        os.kill(int(pid.group(1)), signal.SIGTERM)


def test_a_command_cannot_use_the_ssh_agent_unless_scope_opens_it(
    project: Path, avatar_env: dict[str, str], model_server: FakeModelServer, ssh_agent: str
) -> None:
    env = {**avatar_env, "SSH_AUTH_SOCK": ssh_agent}
    # ssh-add -l: 2 when it cannot reach an agent, 1 when the agent holds no key.
    shown = _bash(env, project, model_server, f"SSH_AUTH_SOCK={ssh_agent} ssh-add -l; echo rc=$?")
    assert "rc=2" in shown, shown
    Path(env["AVATAR_CONFIG"]).write_text("scope:\n  sockets: [ssh-agent]\n")
    shown = _bash(env, project, model_server, "ssh-add -l; echo rc=$?")
    assert "rc=1" in shown and "no identities" in shown, shown


def test_a_command_cannot_reach_avatars_server(
    project: Path, avatar_env: dict[str, str], model_server: FakeModelServer
) -> None:
    with serving(avatar_env, project):
        path = socket_of(avatar_env)
        code = (
            "import socket; s = socket.socket(socket.AF_UNIX); "
            f's.connect("{path}"); s.sendall(b"{{\\"op\\": \\"ps\\"}}\\n"); '
            'print("ANSWER", s.recv(4096))'
        )
        shown = _bash(avatar_env, project, model_server, _python(code))
    assert "ANSWER" not in shown and "rc=1" in shown, shown


def test_a_command_cannot_push_keystrokes_into_avatars_terminal(
    project: Path, avatar_env: dict[str, str], model_server: FakeModelServer
) -> None:
    """avatar runs on a pty the test holds; the command opens that pty by its name and asks
    the kernel to queue a keystroke on it (TIOCSTI; root may do so to any terminal)."""
    master, slave = os.openpty()
    try:
        tty.setraw(slave)  # (so the queue's count is bytes, not lines)
        code = (
            "import fcntl, os, termios\n"
            f'fd = os.open("{os.ttyname(slave)}", os.O_RDWR)\n'
            "try:\n"
            '    fcntl.ioctl(fd, termios.TIOCSTI, b"X")\n'
            '    print("PUSHED")\n'
            "except OSError as e:\n"
            '    print("REFUSED", e.errno)'
        )
        shown = _bash(avatar_env, project, model_server, _python(code), stdin=slave)
        queued = fcntl.ioctl(slave, termios.FIONREAD, b"\0\0\0\0")
    finally:
        os.close(master)
        os.close(slave)
    assert "PUSHED" not in shown and "REFUSED 1" in shown, shown
    assert int.from_bytes(queued, sys.byteorder) == 0


# What a command can reach under each `scope.network`: the test's listener on 127.0.0.1, and a
# listener of its own on its loopback.
NETWORK = {"on": (True, True), "loopback": (False, True), "off": (False, False)}


@pytest.mark.parametrize("network", sorted(NETWORK))
def test_scope_network_says_what_a_command_reaches(
    project: Path,
    avatar_env: dict[str, str],
    model_server: FakeModelServer,
    network: str,
) -> None:
    outside, own = NETWORK[network]
    Path(avatar_env["AVATAR_CONFIG"]).write_text(f"scope:\n  network: {network}\n")
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        code = (
            "import socket\n"
            'for where in ("outside", "own"):\n'
            "    try:\n"
            '        if where == "own":\n'
            '            server = socket.create_server(("127.0.0.1", 0))\n'
            f'        port = server.getsockname()[1] if where == "own" else {port}\n'
            '        socket.create_connection(("127.0.0.1", port), timeout=5)\n'
            '        print(where, "REACHED")\n'
            "    except OSError as e:\n"
            '        print(where, "FAILED", e.errno)'
        )
        shown = _bash(avatar_env, project, model_server, _python(code))
        listener.setblocking(False)
        try:
            listener.accept()[0].close()
            connected = True
        except BlockingIOError:
            connected = False
    assert ("outside REACHED" in shown) == outside == connected, shown
    assert ("own REACHED" in shown) == own, shown


def test_a_killed_avatars_temp_dir_is_removed_at_the_next_start(
    project: Path, avatar_env: dict[str, str], model_server: FakeModelServer
) -> None:
    where = project / "where.txt"
    command = f'echo "$TMPDIR" > {where}; sleep 60'
    model_server.chat.append(Reply.tool_call("bash", {"command": command}))  # (never answered)
    proc = start(avatar_env, project, "-p", "native", "chat", "--permission", "allow", "go")
    deadline = time.monotonic() + 60
    while not (where.exists() and where.read_text().strip()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the command did not start"
        time.sleep(0.05)
    private = Path(where.read_text().strip()).parent  # TMPDIR is <private dir>/tmp
    proc.kill()
    proc.wait()
    assert private.is_dir()  # left behind by the killed avatar
    _bash(avatar_env, project, model_server, "true")
    assert not private.exists()


def test_without_a_c_compiler_the_door_stands_and_says_so(
    project: Path, avatar_env: dict[str, str], model_server: FakeModelServer, tmp_path: Path
) -> None:
    """No compiler on PATH and no stub built yet: `avatar providers` says the walls are
    unavailable and why, a session says once how to fix it, and commands still run (only
    avatar's own checks stand)."""
    tools = tmp_path / "tools"  # a PATH of the programs the command needs, and no compiler
    tools.mkdir()
    for name in ("bash", "echo", "cat"):
        found = shutil.which(name)
        assert found
        (tools / name).symlink_to(found)
    env = {
        **avatar_env,
        "PATH": f"{Path(sys.executable).parent}:{tools}",
        "AVATAR_STUB_DIR": str(tmp_path / "no-stub-yet"),
    }
    listed = avatar(env, project, "providers")
    assert listed.returncode == 0, listed.stderr
    assert "unavailable (no C compiler)" in listed.stdout, listed.stdout
    model_server.chat.append(
        Reply.tool_call("bash", {"command": "echo made > made.txt"}), Reply.text("done")
    )
    run = avatar(env, project, "-p", "native", "chat", "--permission", "allow", "go")
    assert run.returncode == 0, run.stderr
    assert (project / "made.txt").read_text() == "made\n"
    assert run.stderr.count("apt install gcc") == 1, run.stderr
