"""ACP without the SDK (issue 24, issue 31): every ACP session — a one-shot `chat` on a new
session, and a session reopened — runs on `ACPBridge` over avatar's own JSON-RPC client (the
standard library), so neither the SDK nor pydantic loads; a one-shot (its agent started ahead)
shows the user what any other open shows."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from avatar import Engine
from avatar.core.events import BaseEvent
from tests.integration.test_acp_cli import write_fake_provider
from tests.support import drive
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def test_codex_chat_imports_neither_acp_nor_pydantic(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    model_server.script("responses", Reply.text("Answered without the SDK."))
    code = (
        "import sys\n"
        "from avatar.cli import main\n"
        "try:\n    main(['-p', 'codex', 'chat', 'hello'])\n"
        "except SystemExit as e:\n    code = e.code\n"
        "print('LOADED', sorted(m for m in ('acp', 'pydantic') if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=avatar_env(agent_home),
        cwd=agent_home.workdir,
        timeout=150,
    )
    assert "Answered without the SDK." in proc.stdout, proc.stderr
    assert "LOADED []" in proc.stdout, proc.stdout
    assert "(codex, new)" in proc.stderr


def test_a_continued_session_imports_neither_acp_nor_pydantic(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    """The session cascade (`session/load` of the newest session) runs without the SDK too."""
    require_bridges("codex-acp")
    model_server.script("responses", Reply.text("First."), Reply.text("Continued."))
    env, cwd = avatar_env(agent_home), agent_home.workdir
    first = subprocess.run(
        [sys.executable, "-m", "avatar", "-p", "codex", "chat", "hello"],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=150,
    )
    assert "First." in first.stdout, first.stderr
    args = ("-p", "codex", "chat", "--continue", "and on")
    proc = drive.in_process(env, cwd, *args, watch=["acp", "pydantic"], timeout=150)
    assert "Continued." in proc.stdout, proc.stderr
    assert "(codex, continued)" in proc.stderr or "(codex, loaded)" in proc.stderr, proc.stderr
    assert proc.loaded == [], proc.loaded


def _shown(event: BaseEvent) -> tuple[object, ...]:
    """What a user sees of an event (ids and timestamps aside)."""
    return (
        type(event).__name__,
        getattr(event, "text", None),
        getattr(event, "title", None),
        getattr(event, "decision", None),
        getattr(event, "reason", None),
        getattr(event, "output", None),
        getattr(event, "stop_reason", None),
        getattr(event, "message", None),
    )


async def _turn(home: AgentHome, one_shot: bool, prompt: str) -> list[tuple[object, ...]]:
    env = avatar_env(home)
    engine = Engine.from_config(
        home.workdir,
        provider="fake",
        config_file=home.root / "avatar-config.yaml",
        env=env,
        home=Path(env["AVATAR_HOME"]),
    )
    engine.one_shot = one_shot
    if one_shot:
        engine.launch_ahead()  # (as `avatar chat` does: the agent boots before the open)
    seen: list[BaseEvent] = []
    engine.subscribe(seen.append)
    try:
        opened = await engine.open()
        bridge = type(opened.bridge).__name__
        async for event in engine.send(prompt):
            seen.append(event)
    finally:
        await engine.close()
    shown = [_shown(e) for e in seen if type(e).__name__ != "SessionStarted"]
    return [("bridge", bridge), *shown]


def test_one_shot_events_match_the_full_bridge(agent_home: AgentHome, tmp_path: Path) -> None:
    """The fake ACP agent's script (a permission question, a read outside the project, a
    write outside it): the same events, refusals and answers for a one-shot (its agent
    started ahead) as for any other open."""
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    write_fake_provider(
        agent_home, permission=True, fs_read=str(secret), fs_write=str(tmp_path / "evil.txt")
    )
    full = asyncio.run(_turn(agent_home, False, "do risky things"))
    lite = asyncio.run(_turn(agent_home, True, "do risky things"))
    assert full[0] == lite[0] == ("bridge", "ACPBridge")
    assert lite[1:] == full[1:], json.dumps([lite, full], default=str, indent=1)
    texts = "".join(str(e[1]) for e in lite if e[0] == "TextDelta")
    assert "permission: no" in texts and "read refused" in texts and "write refused" in texts
    assert not (tmp_path / "evil.txt").exists()
