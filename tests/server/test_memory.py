"""The server's memory stays flat under use (docs/design.md §11, issue 32): after a warm-up,
1,000 served commands of each kind — `session list`, `ps`, one-shot chats and attach/detach —
grow a real `avatar serve`'s resident set by less than 5 MB. (It grew ~50 KB with each
`session list` and ~95 KB with each one-shot, without end: a status bar polling `avatar ps`
every second would have reached gigabytes in a week.)

The commands are sent as their clients send them (`tests.support.served_load`), so that the
test measures the server and not 4,000 Python starts; the one-shots are native ones, which run
whole inside the server (an ACP one-shot's agent is a process of its own)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support import served_load
from tests.support.homes import AgentHome
from tests.support.model_server import FakeModelServer
from tests.support.served import serving

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

#: Served commands of each kind, after the warm-up.
COMMANDS = 1000
#: Commands of each kind before the resident set is first read: the allocator's arenas, the
#: caches and the modules a first command loads settle in this many (after 300 one-shots the
#: next 500 still grew it ~3 MB, the 500 after those ~1 MB, then it stays within a few MB).
WARM_UP = 1000
#: Growth allowed over `COMMANDS` of every kind, in bytes.
FLAT = 5 << 20


def test_a_thousand_served_commands_of_each_kind_leave_the_server_s_memory_flat(
    agent_home: AgentHome, avatar_env: dict[str, str], model_server: FakeModelServer
) -> None:
    env, cwd = avatar_env, agent_home.workdir
    with serving(env, cwd) as server:
        host = served_load.Host(env, "5e55104a-a77a-4c4e-9e55-ca11ed000001", cwd)
        try:

            def listing() -> object:
                got = served_load.run(env, cwd, "session", "list")
                assert got.code == 0, got
                return got

            def oneshot() -> object:
                got = served_load.run(env, cwd, "-p", "native", "chat", "hello")
                assert got.code == 0 and model_server.default_text in got.out, got
                return got

            def attach() -> object:
                first = served_load.attach_detach(env, host.session_id)
                assert "ok" in first, first
                return first

            kinds: dict[str, Callable[[], object]] = {
                "session list": listing,
                "ps": lambda: served_load.ps(env),
                "one-shot": oneshot,
                "attach/detach": attach,
            }
            for command in kinds.values():
                for _ in range(WARM_UP):
                    command()
            before = served_load.rss(server.pid)
            grown: dict[str, int] = {}
            for name, command in kinds.items():
                start = served_load.rss(server.pid)
                for _ in range(COMMANDS):
                    command()
                grown[name] = served_load.rss(server.pid) - start
            after = served_load.rss(server.pid)
        finally:
            host.close()
    assert after - before < FLAT, {k: f"{v / 1e6:.1f} MB" for k, v in grown.items()}
