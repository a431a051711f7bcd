"""Smoke tests: each real agent CLI pinned in ``bridges/`` answers from the fake model server.

No avatar code is involved — these check the test kit itself (``FakeModelServer`` speaking each
wire protocol well enough, ``AgentHome`` keeping each CLI offline) and pin down the CLIs'
behaviour that the bridges rely on. Skipped only when ``bridges/node_modules`` is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.support.homes import AgentHome, require_bridges
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

#: Upper bound for one ACP call or one CLI run; typical runs take 0.1–3 s.
STEP_TIMEOUT = 60.0
PROMPT = "smoke turn one: say the magic words"
ANSWER = "The magic words are scripted."


@dataclass
class _Client:
    """A minimal ACP client that collects what the agent streams."""

    updates: list[Any] = field(default_factory=list)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        import acp

        raise acp.RequestError(-32601, "permission requests are not expected in smoke tests")

    def agent_text(self) -> str:
        """Concatenated text of the ``agent_message_chunk`` updates."""
        from acp.schema import AgentMessageChunk, TextContentBlock

        return "".join(
            u.content.text
            for u in self.updates
            if isinstance(u, AgentMessageChunk) and isinstance(u.content, TextContentBlock)
        )


@contextlib.asynccontextmanager
async def _acp_agent(
    cmd: list[str], home: AgentHome
) -> AsyncIterator[tuple[Any, _Client, list[str]]]:
    """Spawn an ACP agent in its own process group; yield (connection, client, stderr lines).

    Own spawning rather than ``acp.spawn_agent_process`` because the ``codex-acp`` npm shim
    runs the native binary with ``spawnSync`` and neither forwards signals nor exits on stdin
    EOF: killing only the shim leaks the binary. Killing the whole group does not.
    """
    import acp

    proc = await asyncio.create_subprocess_exec(
        *cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=home.env,
        cwd=home.workdir,
        start_new_session=True,
        limit=16 * 1024 * 1024,
    )
    stderr: list[str] = []

    async def drain() -> None:
        # An unread stderr pipe deadlocks agents once it fills up.
        assert proc.stderr is not None
        async for line in proc.stderr:
            stderr.append(line.decode(errors="replace").rstrip())

    drainer = asyncio.create_task(drain())
    client = _Client()
    conn = acp.connect_to_agent(client, proc.stdin, proc.stdout)
    try:
        yield conn, client, stderr
    finally:
        with contextlib.suppress(Exception):
            await conn.close()
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 0.5)
        except TimeoutError:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, sig)
                try:
                    await asyncio.wait_for(proc.wait(), 3.0)
                    break
                except TimeoutError:
                    continue
        # The group may outlive its leader (the codex-acp binary under the npm shim).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        drainer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await drainer


async def _one_acp_turn(cmd: list[str], home: AgentHome) -> tuple[str, str]:
    """initialize → session/new → session/prompt; return (agent text, stop reason)."""
    import acp

    async with _acp_agent(cmd, home) as (conn, client, stderr):
        try:
            init = await asyncio.wait_for(
                conn.initialize(protocol_version=acp.PROTOCOL_VERSION), STEP_TIMEOUT
            )
            assert init.protocol_version == acp.PROTOCOL_VERSION
            session = await asyncio.wait_for(
                conn.new_session(cwd=str(home.workdir), mcp_servers=[]), STEP_TIMEOUT
            )
            result = await asyncio.wait_for(
                conn.prompt(session_id=session.session_id, prompt=[acp.text_block(PROMPT)]),
                STEP_TIMEOUT,
            )
        except BaseException as exc:
            tail = "\n".join(stderr[-30:])
            raise AssertionError(f"{cmd[0]} failed: {exc!r}\n--- agent stderr ---\n{tail}") from exc
        # Chunks are notifications handled as tasks; let the last ones land.
        for _ in range(20):
            if ANSWER in client.agent_text():
                break
            await asyncio.sleep(0.05)
        return client.agent_text(), str(result.stop_reason)


def _assert_prompt_recorded(server: FakeModelServer, api: str) -> None:
    main = server.requests_for(api)
    assert main, f"no {api} request recorded: {[(r.method, r.path) for r in server.requests]}"
    assert any(PROMPT in r.all_text() for r in main), "the prompt never reached the model"
    assert server.proxy_attempts == [], f"tried to reach external hosts: {server.proxy_attempts}"


def test_claude_print_mode(agent_home: AgentHome, model_server: FakeModelServer) -> None:
    """``claude -p PROMPT --output-format stream-json --verbose`` streams the scripted text."""
    require_bridges("claude")
    model_server.script("anthropic", Reply.text(ANSWER))
    proc = subprocess.run(
        [agent_home.bin("claude"), "-p", PROMPT, "--output-format", "stream-json", "--verbose"],
        env=agent_home.env,
        cwd=agent_home.workdir,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    types = [e.get("type") for e in events]
    assert types[0] == "system" and events[0].get("subtype") == "init", types
    result = events[-1]
    assert result["type"] == "result" and not result["is_error"], result
    assert result["result"] == ANSWER
    assert result["session_id"] == events[0]["session_id"]
    _assert_prompt_recorded(model_server, "anthropic")
    first = model_server.requests_for("anthropic")[0]
    assert first.query.get("beta") == "true" and first.stream


def test_codex_acp(agent_home: AgentHome, model_server: FakeModelServer) -> None:
    """codex-acp (custom Responses provider in CODEX_HOME) streams the scripted text."""
    require_bridges("codex-acp")
    model_server.script("responses", Reply.text(ANSWER))
    text, stop = asyncio.run(_one_acp_turn([agent_home.bin("codex-acp")], agent_home))
    assert text == ANSWER
    assert stop == "end_turn"
    _assert_prompt_recorded(model_server, "responses")
    assert model_server.requests_for("responses")[0].model == agent_home.codex_model


def test_gemini_acp(agent_home: AgentHome, model_server: FakeModelServer) -> None:
    """``gemini --acp`` streams the scripted text; its router call is a side request."""
    require_bridges("gemini")
    model_server.script("gemini", Reply.text(ANSWER))
    text, stop = asyncio.run(_one_acp_turn([agent_home.bin("gemini"), "--acp"], agent_home))
    assert text == ANSWER
    assert stop == "end_turn"
    _assert_prompt_recorded(model_server, "gemini")
    assert all(":streamGenerateContent" in r.path for r in model_server.requests_for("gemini"))
    # The scripted reply went to the conversation, not to the classifier.
    assert len(model_server.gemini) == 0


def test_claude_agent_acp(agent_home: AgentHome, model_server: FakeModelServer) -> None:
    """claude-agent-acp (driving the pinned claude binary) streams the scripted text."""
    require_bridges("claude-agent-acp", "claude")
    model_server.script("anthropic", Reply.text(ANSWER))
    text, stop = asyncio.run(_one_acp_turn([agent_home.bin("claude-agent-acp")], agent_home))
    assert text == ANSWER
    assert stop == "end_turn"
    _assert_prompt_recorded(model_server, "anthropic")
