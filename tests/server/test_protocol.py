"""The server's protocol has no size ceiling and carries only the environment avatar and the
agents use (docs/design.md §11, issue 32), on the fake ACP agent through a real `avatar serve`:
a 1 MB prompt and a 200 KiB environment print through the server what they print without it;
the agent of a served chat gets the variables avatar and the agents read, not the rest of the
client's environment; what goes wrong on the socket is said in one line."""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path

import pytest

from tests.integration.test_acp_cli import write_fake_provider
from tests.support.drive import avatar, start
from tests.support.homes import AgentHome
from tests.support.served import descendants, processes_with, serving, socket_of

pytestmark = pytest.mark.timeout(180)


def _same(text: str) -> str:
    """Output with session ids and ages made comparable."""
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<id>", text)
    return re.sub(r"\d+[smhd] ago|just now", "<age>", text)


def test_a_megabyte_prompt_and_a_large_environment_work_served_as_unserved(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    write_fake_provider(agent_home)
    cwd = agent_home.workdir
    # One argument holds up to 128 KiB (MAX_ARG_STRLEN): a longer prompt comes on stdin.
    long_arg = "long prompt " + "0123456789abcdef" * 6000  # ~94 KiB
    megabyte = "piped prompt " + "0123456789abcdef" * (1 << 16)  # 1 MiB and a bit
    # A 200 KiB environment (a variable holds up to 128 KiB too).
    big_env = {**avatar_env, **{f"BIG_UNRELATED_{i}": "y" * (50 << 10) for i in range(4)}}
    cold_env = {**big_env, "AVATAR_NO_SERVER": "1"}
    runs: list[tuple[tuple[str, ...], str | None]] = [
        (("-p", "fake", "chat", long_arg), None),
        (("-p", "fake", "chat", "-"), megabyte),
        (("session", "list"), None),
        (("ps", "--json"), None),
    ]
    cold = [avatar(cold_env, cwd, *args, stdin=stdin) for args, stdin in runs]
    assert cold[0].returncode == 0, cold[0].stderr
    assert "reply 1 to 'long prompt 0123" in cold[0].stdout
    assert "reply 1 to 'piped prompt 0123" in cold[1].stdout
    with serving(avatar_env, cwd) as server:
        warm = [avatar(big_env, cwd, *args, stdin=stdin) for args, stdin in runs]
        # (served: the server ran the chats, and keeps an agent warm for the next one)
        deadline = time.monotonic() + 30
        while not set(processes_with(str(agent_home.root / "fake-state"))) & descendants(
            server.pid
        ):
            assert time.monotonic() < deadline, "no agent was started by the server"
            time.sleep(0.05)
    for before, after in zip(cold, warm, strict=True):
        assert after.returncode == before.returncode, after.stderr
        assert _same(after.stderr) == _same(before.stderr), after.args[:4]
        # (the served listing lists the cold runs' sessions too; ps, the sessions the server
        # keeps loaded a while after their chats)
        if "list" not in after.args and "ps" not in after.args:
            assert _same(after.stdout) == _same(before.stdout), after.args[:4]
    assert len(warm[1].stdout) > 1 << 20


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(e.split("=", 1) for e in raw.decode(errors="replace").split("\0") if "=" in e)


def test_a_served_agent_gets_the_variables_avatar_and_the_agents_use_and_no_others(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    write_fake_provider(agent_home, chunk_delay=1.0)
    config_file = agent_home.root / "avatar-config.yaml"
    config = json.loads(config_file.read_text())
    config["providers"]["fake"]["env_read"] = ["FAKE_AGENT_*"]  # a configured agent's own
    config_file.write_text(json.dumps(config))
    cwd = agent_home.workdir
    env = {
        **avatar_env,
        "UNRELATED_SETTING": "not carried",
        "FAKE_AGENT_TOKEN": "its own",
        "ANTHROPIC_MODEL": "claude-x",  # a provider's declared variable (its model_from)
        "OPENAI_API_KEY": "sk-test",  # one's login_env
        "LC_TIME": "C",  # the locale
    }
    state = str(agent_home.root / "fake-state")
    with serving(avatar_env, cwd):
        chat = start(env, cwd, "-p", "fake", "chat", "take your time")
        deadline = time.monotonic() + 60
        while not processes_with(state):
            assert time.monotonic() < deadline and chat.poll() is None, chat.communicate()
            time.sleep(0.05)
        [agent] = processes_with(state)
        seen = _environ(agent)
        chat.communicate(timeout=60)
    assert chat.returncode == 0
    assert "UNRELATED_SETTING" not in seen
    for name in ("ANTHROPIC_MODEL", "OPENAI_API_KEY", "FAKE_AGENT_TOKEN", "LC_TIME", "PATH"):
        assert seen.get(name) == env[name], name


def _raw(path: Path, data: bytes) -> list[dict[str, object]]:
    """What the server answers to `data` sent on a connection of its own."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    sock.connect(str(path))
    sock.sendall(data)
    sock.shutdown(socket.SHUT_WR)
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    sock.close()
    return [json.loads(line) for line in got.splitlines()]


def test_a_request_the_server_cannot_read_is_answered_in_one_line(
    agent_home: AgentHome, avatar_env: dict[str, str]
) -> None:
    with serving(avatar_env, agent_home.workdir):
        path = socket_of(avatar_env)
        assert _raw(path, b"not json at all\n") == [
            {"error": "a request that is not JSON: Expecting value (line 1, column 1)", "exit": 2}
        ]
        assert _raw(path, b"[1, 2]\n") == [
            {"error": "a request that is not a JSON object", "exit": 2}
        ]
        big = json.dumps({"op": "ps", "pad": "z" * (1 << 20)}).encode() + b"\n"
        assert _raw(path, big) == [{"live": []}]  # (a large one is read whole)


def test_every_variable_a_command_in_the_walls_gets_is_carried() -> None:
    from avatar.policy.sandbox import COMMAND_ENV, COMMAND_ENV_PREFIXES
    from avatar.server.environment import NAMES, PREFIXES

    assert COMMAND_ENV <= NAMES
    assert set(COMMAND_ENV_PREFIXES) <= set(PREFIXES)
