"""`/fork N` in the installed REPL (pexpect): the fork keeps messages 1..N and is opened, so
the next turn's model request carries exactly those messages."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pexpect

from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer, Reply

AVATAR = shutil.which("avatar", path=str(Path(sys.executable).parent)) or "avatar"
ULID = r"[0-9A-HJKMNP-TV-Z]{26}"
TURN_END = r"─ \d+\.\ds"


def test_slash_fork_at_a_message(agent_home: AgentHome, model_server: FakeModelServer) -> None:
    model_server.chat.append(Reply.text("Alpha answer."), Reply.text("Beta answer."), "Gamma.")
    child = pexpect.spawn(
        AVATAR,
        ["-p", "native", "repl"],
        cwd=str(agent_home.workdir),
        env=avatar_env(agent_home),
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 200),
    )
    child.expect("avatar REPL")
    child.sendline("alpha question")
    child.expect(rf"session: ({ULID}) \(native, new\)")
    parent = child.match.group(1)
    child.expect(TURN_END)
    child.sendline("beta question")
    child.expect(TURN_END)

    child.sendline("/fork two")
    child.expect(r"usage: /fork \[N\]")
    child.sendline("/fork 2")
    child.expect(rf"session: ({ULID}) \(native, forked\)")
    assert child.match.group(1) != parent
    child.sendline("gamma question")
    child.expect("Gamma.")
    child.expect(TURN_END)
    sent = model_server.requests_for("chat")[-1].conversation_texts()
    assert sent == ["alpha question", "Alpha answer.", "gamma question"]
    child.sendline("/quit")
    child.expect(pexpect.EOF)
