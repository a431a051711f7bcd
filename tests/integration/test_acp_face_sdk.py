"""`avatar acp` driven by a second client nobody here wrote: the ACP Python SDK's client side
(`agent-client-protocol`, a development dependency), which checks every message avatar sends
against the protocol's own schema (pydantic models): a message of the wrong shape fails here.

The SDK ships no example client in its package, so this is the smallest one on its client side
(`acp.spawn_agent_process`, a `Client` with `session_update` and `request_permission`), driving
the native agent against the fake model server: a turn that writes a file (its permission
question answered by the SDK client, its diff streamed), the session listed and set to another
model.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

AVATAR = str(Path(sys.executable).parent / "avatar")


class SdkClient:
    """The SDK client's side: every update kept (as the SDK parsed it), permission allowed."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.asked: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(
        self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any
    ) -> Any:
        from acp.schema import AllowedOutcome, RequestPermissionResponse

        self.asked.append(tool_call)
        chosen = next(o for o in options if o.kind == "allow_once")
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id)
        )


async def drive(env: dict[str, str], cwd: Path, client: SdkClient) -> dict[str, Any]:
    import acp
    from acp.schema import ClientCapabilities, Implementation

    async with acp.spawn_agent_process(client, AVATAR, "-p", "native", "acp", env=env, cwd=cwd) as (
        conn,
        _proc,
    ):
        hello = await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="sdk-test", version="1"),
        )
        new = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        answer = await conn.prompt(
            session_id=new.session_id, prompt=[acp.text_block("Write hello.txt.")]
        )
        listed = await conn.list_sessions(cwd=str(cwd))
        menu = next(o for o in new.config_options or [] if o.id == "model")
        other = next(
            c.value for c in menu.options if c.value not in ("default", menu.current_value)
        )
        changed = await conn.set_config_option(
            config_id="model", session_id=new.session_id, value=other
        )
        return {
            "hello": hello,
            "new": new,
            "answer": answer,
            "listed": listed,
            "set": changed,
            "other": other,
        }


def test_the_sdk_client_drives_a_native_turn_that_writes_a_file(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    env = avatar_env(agent_home)
    write = Reply.tool_call("write", {"path": "hello.txt", "content": "hello\n"})
    model_server.script("chat", write, Reply.text("Wrote it."))
    client = SdkClient()
    got = asyncio.run(drive(env, agent_home.workdir, client))

    assert got["hello"].agent_capabilities.load_session is True
    assert got["hello"].agent_capabilities.session_capabilities.list is not None
    assert got["answer"].stop_reason == "end_turn"
    assert (agent_home.workdir / "hello.txt").read_text() == "hello\n"
    assert len(client.asked) == 1 and client.asked[0].kind == "edit"
    kinds = [u.session_update for u in client.updates]
    assert "tool_call" in kinds and "agent_message_chunk" in kinds, kinds
    diffs = [
        c
        for u in client.updates
        if u.session_update in ("tool_call", "tool_call_update")
        for c in (u.content or [])
        if c.type == "diff"
    ]
    assert diffs and diffs[-1].new_text == "hello\n", client.updates
    assert diffs[-1].path == str(agent_home.workdir / "hello.txt")
    text = "".join(
        u.content.text for u in client.updates if u.session_update == "agent_message_chunk"
    )
    assert text == "Wrote it."
    sid = got["new"].session_id
    assert [s.session_id for s in got["listed"].sessions] == [sid]
    model = next(o for o in got["set"].config_options if o.id == "model")
    assert model.current_value == got["other"]
