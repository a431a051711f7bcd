"""Agent lifecycle: spawn errors, crash mid-prompt, restart and reopen, stderr floods, replay."""

from __future__ import annotations

import ast
import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from avatar.bridges.acp.bridge import ACPBridge
from avatar.bridges.base import BridgeContext, OpenRequest
from avatar.core.config import McpServer, ProviderConfig, Settings
from avatar.core.errors import ProviderError
from avatar.core.events import Error, TurnFinished
from avatar.providers.registry import ProviderSpec
from tests.acp.conftest import REPO, Factory, build, text_of
from tests.support.acp_agent import seed_session


def _ctx(tmp_path: Path, command: tuple[str, ...]) -> BridgeContext:
    spec = ProviderSpec(
        name="ghost", transport="acp", command=command, install_hint="npm i -g ghost-acp"
    )
    return BridgeContext(spec=spec, cwd=tmp_path, settings=Settings(), avatar_home=tmp_path)


def test_importing_the_bridge_does_not_import_acp() -> None:
    code = "import sys, avatar.bridges.acp.bridge; assert 'acp' not in sys.modules, 'acp imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_no_module_of_avatar_imports_the_acp_sdk() -> None:
    """avatar's ACP client is its own (docs/design.md §2): no module imports the SDK, so no
    start of an ACP agent pays its import, and nothing leans on the SDK's private API."""
    found = []
    for path in sorted((REPO / "avatar").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            found += [f"{path.relative_to(REPO)}: {n}" for n in names if n.split(".")[0] == "acp"]
    assert found == []


async def test_missing_executable_names_the_install_hint(tmp_path: Path) -> None:
    bridge = ACPBridge(_ctx(tmp_path, ("ghost-acp-not-installed", "--acp")))
    with pytest.raises(
        ProviderError, match=r"ghost-acp-not-installed not found.*npm i -g ghost-acp"
    ):
        await bridge.start()


async def test_unrunnable_executable(tmp_path: Path) -> None:
    program = tmp_path / "not-a-program"
    program.write_text("no shebang, not executable")
    bridge = ACPBridge(_ctx(tmp_path, (str(program),)))
    with pytest.raises(ProviderError, match="not found"):
        await bridge.start()


async def test_agent_dying_before_initialize(tmp_path: Path) -> None:
    code = "import sys; sys.stderr.write('boom: no config\\n'); sys.exit(2)"
    bridge = ACPBridge(_ctx(tmp_path, (sys.executable, "-c", code)))
    with pytest.raises(ProviderError, match=r"exited during initialize \(exit code 2\)") as info:
        await bridge.start()
    assert "boom: no config" in (info.value.stderr_tail or "")


async def test_crash_mid_prompt_then_restart_reopens(fake: Factory) -> None:
    h = await fake("load,list", crash=True)
    await h.bridge.open(OpenRequest("new"))
    sid = h.bridge.session_id
    events = await h.turn("crash now")  # (an unnoticed death would hang: the test's timeout)
    error = events[-1]
    assert isinstance(error, Error), events
    assert "exited unexpectedly (exit code 3)" in error.message
    assert "fatal: out of cheese" in (error.detail or "")
    assert not h.bridge.alive
    # The dead agent's next turn is an error, not a hang.
    again = await h.turn("anyone?")
    assert isinstance(again[-1], Error)

    # Restart (as the engine does: start again, reopen by id) runs the same command (still
    # crash=True); reconfigure once it is back.
    await h.bridge.start()
    assert h.bridge.alive and h.bridge.session_id is None
    started = await h.bridge.open(OpenRequest("resume", sid))
    assert (started.session_id, started.how) == (sid, "loaded")
    await h.configure(crash=False)
    events = await h.turn("after restart")
    assert "to 'after restart'" in text_of(events)
    assert isinstance(events[-1], TurnFinished)


async def test_idle_agent_death_is_reported(fake: Factory) -> None:
    h = await fake()
    await h.bridge.open(OpenRequest("new"))
    os.kill(h.bridge.status()["pid"], signal.SIGKILL)
    for _ in range(100):
        if any(isinstance(e, Error) for e in h.emitted):
            break
        await asyncio.sleep(0.02)
    (error,) = [e for e in h.emitted if isinstance(e, Error)]
    assert "exited unexpectedly (killed by SIGKILL)" in error.message


async def test_death_during_a_request_is_one_error(fake: Factory) -> None:
    h = await fake(crash_on_new=True)
    with pytest.raises(ProviderError, match=r"exited during session/new \(exit code 4\)") as info:
        await h.bridge.open(OpenRequest("new"))
    assert "cannot create sessions today" in (info.value.stderr_tail or "")
    await asyncio.sleep(0.1)
    assert h.emitted == []  # not reported twice


async def test_stderr_flood_does_not_stall(fake: Factory) -> None:
    h = await fake(stderr_flood=10 * 1024 * 1024)
    await h.bridge.open(OpenRequest("new"))
    events = await h.turn("flood")  # (a stalled agent would hang: the test's timeout)
    assert isinstance(events[-1], TurnFinished)
    assert h.bridge.agent is not None
    assert h.bridge.agent.process.stderr.bytes_read >= 10 * 1024 * 1024
    assert (h.bridge.agent.stderr_tail() or "").endswith("fake agent: flood done")


async def test_late_replay_never_leaks_into_the_first_answer(fake: Factory, tmp_path: Path) -> None:
    root = tmp_path / "agent"
    (root / "work").mkdir(parents=True)
    sid = seed_session(root / "state", root / "work", turns=4)
    h = await fake(
        "load",
        root=root,
        quirks=frozenset({"late_replay"}),
        late_replay=0.25,
        replay_gap=0.02,
    )
    started = await h.bridge.open(OpenRequest("resume", sid))
    assert started.how == "loaded"
    # Prompt at once: the bridge must hold the prompt until the replay has settled.
    events = await h.turn("fresh question")
    assert text_of(events) == "reply 5 to 'fresh question' (history 8)"
    assert not any(e.replay or e.type == "user_message" for e in events)
    replay = [(e.type, getattr(e, "text", None)) for e in h.emitted if e.replay]
    assert replay == [
        kind
        for n in range(1, 5)
        for kind in (("user_message", f"earlier question {n}"), ("text", f"earlier answer {n}"))
    ]


async def test_auth_required_without_config(fake: Factory) -> None:
    h = await fake(auth_method="fake-login")
    with pytest.raises(ProviderError) as info:
        await h.bridge.open(OpenRequest("new"))
    message = str(info.value)
    assert "requires authentication" in message and "run fake login" in message
    assert "providers.fake.auth_method to one of: fake-login" in message


async def test_auth_with_configured_method(fake: Factory) -> None:
    settings = Settings(providers={"fake": ProviderConfig(auth_method="fake-login")})
    h = await fake(auth_method="fake-login", settings=settings)
    started = await h.bridge.open(OpenRequest("new"))
    assert started.how == "new"
    assert h.requests("authenticate") == [{"method_id": "fake-login"}]


async def test_mcp_servers_are_passed_by_capability(fake: Factory) -> None:
    servers = {
        "files": McpServer(command="python3", args=["-m", "srv"], env={"A": "1"}),
        "web": McpServer(url="http://127.0.0.1:9/mcp"),
        "events": McpServer(url="http://127.0.0.1:9/sse", type="sse"),
    }
    h = await fake("load,mcp_http", settings=Settings(mcp_servers=servers))
    await h.bridge.open(OpenRequest("new"))
    (new,) = h.requests("session/new")
    sent = {s["name"]: s for s in new["mcp_servers"]}
    assert set(sent) == {"files", "web"}
    assert Path(sent["files"]["command"]).is_absolute()
    assert sent["files"]["args"] == ["-m", "srv"]
    assert sent["files"]["env"] == [{"name": "A", "value": "1"}]
    assert sent["web"] == {
        "name": "web",
        "url": "http://127.0.0.1:9/mcp",
        "headers": [],
        "type": "http",
    }
    assert h.notices() == ["MCP server 'events' not passed: the agent does not accept sse servers"]


async def test_additional_dirs_only_when_advertised(tmp_path: Path, fake: Factory) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    plain = await fake("", additional_dirs=[extra])
    await plain.bridge.open(OpenRequest("new"))
    assert plain.requests("session/new")[0].get("additional_directories") is None
    able = await fake("additional_dirs", additional_dirs=[extra])
    await able.bridge.open(OpenRequest("new"))
    assert able.requests("session/new")[0]["additional_directories"] == [str(extra.resolve())]


async def test_model_is_set_through_config_options(fake: Factory, tmp_path: Path) -> None:
    h = build(tmp_path / "m", models=["small", "large"])
    h.bridge.ctx.model = "large"
    await h.bridge.start()
    try:
        started = await h.bridge.open(OpenRequest("new"))
        assert started.model == "large"
        assert h.requests("session/set_config_option") == [{"config_id": "model", "value": "large"}]
        with pytest.raises(ProviderError, match="cannot switch to model 'huge'"):
            await h.bridge.set_model("huge")
    finally:
        await h.bridge.stop()


async def test_model_without_a_config_option_uses_session_set_model(
    fake: Factory, tmp_path: Path
) -> None:
    # The fake agent answers no session/set_model: the model stays unset, with one warning.
    h = build(tmp_path / "m")
    h.bridge.ctx.model = "large"
    await h.bridge.start()
    try:
        started = await h.bridge.open(OpenRequest("new"))
        assert started.how == "new"
        (notice,) = h.notices()
        assert "model 'large' not set" in notice and "-32601" in notice
    finally:
        await h.bridge.stop()


def test_capabilities_formulas() -> None:
    """`initialize`'s answer as agents write it (built on the SDK's schema, sent as JSON)."""
    from acp.schema import (
        AgentCapabilities,
        SessionCapabilities,
        SessionDeleteCapabilities,
        SessionListCapabilities,
        SessionResumeCapabilities,
    )

    from avatar.bridges.acp.bridge import session_capabilities

    def answered(caps: AgentCapabilities) -> SessionCapabilities:
        return session_capabilities(caps.model_dump(mode="json", by_alias=True, exclude_none=True))

    none = answered(AgentCapabilities())
    assert none.names() == ["cancel"]
    caps = answered(
        AgentCapabilities(
            load_session=False,
            session_capabilities=SessionCapabilities(
                list=SessionListCapabilities(),
                resume=SessionResumeCapabilities(),
                delete=SessionDeleteCapabilities(),
            ),
        )
    )
    assert caps.names() == ["list", "resume", "continue_last", "delete", "cancel"]
    list_only = answered(
        AgentCapabilities(session_capabilities=SessionCapabilities(list=SessionListCapabilities()))
    )
    assert not list_only.can_continue_last
    assert answered(AgentCapabilities(session_capabilities=None)).names() == ["cancel"]


async def test_a_late_update_of_a_session_left_behind_is_dropped(tmp_path: Path) -> None:
    """One agent process, two sessions: after `/new`, the old session's late title must not
    land in the new one (it does arrive while that session is still the open one)."""
    h = build(tmp_path / "late", after_reply=True, after_delay=0.3)
    await h.bridge.start()
    try:
        await h.bridge.open(OpenRequest("new"))
        await h.turn("stay here")
        await asyncio.sleep(0.6)
        assert [e.type for e in h.emitted] == ["title"]  # control: same session, it arrives
        h.emitted.clear()
        left = h.bridge.session_id
        await h.turn("then leave")
        await h.bridge.open(OpenRequest("new"))
        assert h.bridge.session_id not in (None, left)
        await asyncio.sleep(0.6)
        await h.configure(after_reply=False)
        events = await h.turn("in the new session")
        assert not any(e.type == "title" for e in [*h.emitted, *events])
        assert "reply 1 to 'in the new session'" in text_of(events)
    finally:
        await h.bridge.stop()
