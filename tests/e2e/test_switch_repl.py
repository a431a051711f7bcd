"""End-to-end: `/provider` in the installed `avatar` REPL (pexpect), against the fake server:
on the provider already open it says so and opens nothing; to an agent that fails to start it
says why in one line, and the next prompt goes on in the session that was open."""

from __future__ import annotations

import json
import re

import pexpect

from tests.e2e.test_repl import TURN_END, ULID, spawn
from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer, Reply


def test_provider_on_the_open_provider_and_a_failed_switch(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    broken = agent_home.root / "broken-agent"
    broken.write_text("#!/bin/sh\necho 'no config for this agent' >&2\nexit 3\n")
    broken.chmod(0o755)
    env = avatar_env(agent_home)
    config = {"providers": {"codex": {"executable": str(broken)}}}
    (agent_home.root / "avatar-config.yaml").write_text(json.dumps(config))
    model_server.chat.append(*(Reply.text(t) for t in ("One.", "Two.", "Three.")))

    child = spawn(agent_home, "-p", "native", "repl", env=env)
    child.sendline("FIRST: remember the pelican")
    child.expect(rf"session: ({ULID}) \(native, new\)")
    first = child.match.group(1)
    child.expect(TURN_END)

    child.sendline("/provider native")
    child.expect(rf"already on native \(session {first}\)")
    child.sendline("SECOND: and the heron")
    child.expect("Two.")
    child.expect(TURN_END)
    assert "session:" not in child.before  # nothing opened

    child.sendline("/provider codex")
    # (one line, which the screen may wrap)
    child.expect(
        r"avatar: could not switch to codex \([\s\S]*?\); still on native\s+session\s+(\S+)"
    )
    assert child.match.group(1) == first
    child.sendline("THIRD: and the crane")
    child.expect("Three.")
    child.expect(TURN_END)
    child.sendline("/quit")
    child.expect(pexpect.EOF)

    last = [r for r in model_server.requests_for("chat") if r.is_main][-1].all_text()
    for words in ("FIRST: remember the pelican", "SECOND: and the heron", "THIRD: and the crane"):
        assert words in last
    assert not re.search(r"handed over", last)
