"""ClaudeBridge process handling, sessions, permissions and interrupts (with a fake claude)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from avatar.bridges.base import OpenRequest
from avatar.config import Settings
from avatar.errors import ProviderError, SessionNotFoundError, UsageError
from avatar.events import (
    Error,
    Notice,
    PermissionRequested,
    TextDelta,
    ToolCallFinished,
    TurnFinished,
    Usage,
)
from avatar.providers import BUILTIN
from tests.claude.conftest import FakeClaude, collect


def text(events: list) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_new_session_turns_and_explicit_env(fake: FakeClaude) -> None:
    bridge = fake.bridge(model="claude-x", system_prompt="Be brief.")
    await bridge.start()
    assert bridge.session_capabilities.names() == [
        "list",
        "resume",
        "continue_last",
        "fork",
        "delete",
        "cancel",
    ]
    started = await bridge.open(OpenRequest("new"))
    assert started.how == "new" and started.provider == "claude"
    uuid.UUID(started.session_id)
    try:
        first = await collect(bridge.send("hello"))
        assert text(first) == "Hello from fake claude."
        assert first[-1] == TurnFinished(stop_reason="end_turn")
        usage = next(e for e in first if isinstance(e, Usage))
        assert usage.cost_usd == 0.01 and usage.context_size == 1000
        second = await collect(bridge.send("again"))
        assert second[-1] == TurnFinished(stop_reason="end_turn")
    finally:
        await bridge.stop()
    [start] = fake.events("start")  # one persistent process for both turns
    argv = start["argv"]
    assert argv[argv.index("--session-id") + 1] == started.session_id
    assert argv[argv.index("--model") + 1] == "claude-x"
    assert argv[argv.index("--append-system-prompt") + 1] == "Be brief."
    assert start["env"]["AVATAR_TEST_MARKER"] == "passed-explicitly"
    assert "PYTEST_CURRENT_TEST" not in start["env"]  # nothing leaks from avatar's own env
    assert start["cwd"] == str(fake.cwd)
    assert [u["text"] for u in fake.events("user")] == ["hello", "again"]
    await bridge.stop()  # twice is fine


async def test_missing_executable(fake: FakeClaude) -> None:
    spec = replace(BUILTIN["claude"], command=("no-such-claude", "-p"))
    bridge = fake.bridge(spec=spec)
    with pytest.raises(ProviderError, match=r"no-such-claude not found.*install"):
        await bridge.start()


@pytest.mark.parametrize("allow", [True, False])
async def test_permission_requests_follow_the_policy(fake: FakeClaude, allow: bool) -> None:
    fake.allow = allow
    bridge = fake.bridge()
    await bridge.open(OpenRequest("new"))
    try:
        events = await collect(bridge.send("TOOL please"))
    finally:
        await bridge.stop()
    [perm] = [e for e in events if isinstance(e, PermissionRequested)]
    assert perm.decision == ("allow" if allow else "deny")
    assert perm.kind == "execute" and perm.title == "Bash: make x" and perm.id == "toolu_1"
    [done] = [e for e in events if isinstance(e, ToolCallFinished)]
    assert done.is_error is (not allow)
    [answer] = fake.events("control_response")
    verdict = answer["response"]["response"]
    assert verdict["behavior"] == ("allow" if allow else "deny")
    if allow:
        assert verdict["updatedInput"] == {"command": "touch x", "description": "make x"}


async def test_unknown_control_requests_get_an_error(fake: FakeClaude) -> None:
    bridge = fake.bridge()
    await bridge.open(OpenRequest("new"))
    try:
        events = await collect(bridge.send("HOOK"))
    finally:
        await bridge.stop()
    assert events[-1] == TurnFinished(stop_reason="end_turn")
    [answer] = fake.events("hook_answer")
    assert answer["response"]["subtype"] == "error"


async def _cancel_after_text(bridge, prompt: str) -> list:
    events = []
    async for event in bridge.send(prompt):
        events.append(event)
        if isinstance(event, TextDelta) and len(events) == 3:
            asyncio.get_running_loop().create_task(bridge.cancel())
    return events


async def test_interrupt_uses_the_control_request(fake: FakeClaude) -> None:
    bridge = fake.bridge()
    await bridge.open(OpenRequest("new"))
    try:
        t0 = time.monotonic()
        events = await _cancel_after_text(bridge, "SLOW")
        assert time.monotonic() - t0 < 3
        assert events[-1] == TurnFinished(stop_reason="cancelled")
        assert not any(isinstance(e, Error) for e in events)
        after = await collect(bridge.send("next"))
        assert text(after) == "Hello from fake claude."
    finally:
        await bridge.stop()
    assert len(fake.events("start")) == 1  # same process after the interrupt
    assert [r["request"]["subtype"] for r in fake.events("control_request")] == ["interrupt"]


async def test_interrupt_without_cli_support_restarts_with_resume(fake: FakeClaude) -> None:
    fake.extra_env["FAKE_CLAUDE_NO_INTERRUPT"] = "1"
    bridge = fake.bridge()
    started = await bridge.open(OpenRequest("new"))
    try:
        events = await _cancel_after_text(bridge, "SLOW")
        assert events[-1] == TurnFinished(stop_reason="cancelled")
        after = await collect(bridge.send("next"))
        assert text(after) == "Hello from fake claude."
    finally:
        await bridge.stop()
    starts = fake.events("start")
    assert len(starts) == 2
    assert starts[1]["argv"][starts[1]["argv"].index("--resume") + 1] == started.session_id


async def test_cancel_when_idle_is_a_no_op(fake: FakeClaude) -> None:
    bridge = fake.bridge()
    await bridge.open(OpenRequest("new"))
    await bridge.cancel()
    await bridge.stop()
    assert fake.events("control_request") == []


async def test_crash_gives_an_error_with_stderr_and_recovers(fake: FakeClaude) -> None:
    bridge = fake.bridge()
    started = await bridge.open(OpenRequest("new"))
    try:
        await collect(bridge.send("first"))
        events = await collect(bridge.send("CRASH now"))
        [error] = [e for e in events if isinstance(e, Error)]
        assert "exit code 3" in error.message and "fatal: something broke" in error.message
        assert error.detail and "some noise" in error.detail
        after = await collect(bridge.send("still there?"))
        assert text(after) == "Hello from fake claude."
    finally:
        await bridge.stop()
    starts = fake.events("start")
    assert starts[1]["argv"][starts[1]["argv"].index("--resume") + 1] == started.session_id


async def test_stderr_is_drained(fake: FakeClaude) -> None:
    bridge = fake.bridge()
    await bridge.open(OpenRequest("new"))
    try:
        events = await asyncio.wait_for(collect(bridge.send("FLOOD")), 20)
    finally:
        await bridge.stop()
    assert events[-1] == TurnFinished(stop_reason="end_turn")


async def test_resume_continue_and_unknown_ids(fake: FakeClaude) -> None:
    first = fake.bridge()
    a = await first.open(OpenRequest("new"))
    await collect(first.send("one"))
    await first.stop()
    b_bridge = fake.bridge()
    b = await b_bridge.open(OpenRequest("new"))
    await collect(b_bridge.send("two"))
    await b_bridge.stop()

    bridge = fake.bridge()
    try:
        resumed = await bridge.open(OpenRequest("resume", a.session_id))
        assert (resumed.how, resumed.session_id) == ("resumed", a.session_id)
        assert (await fake.starts(3))[2]["argv"][-2:] == ["--resume", a.session_id]
        cont = await bridge.open(OpenRequest("continue"))
        assert (cont.how, cont.session_id) == ("continued", b.session_id)
        missing = str(uuid.uuid4())
        fresh = await bridge.open(OpenRequest("resume", missing))
        assert fresh.how == "new" and fresh.session_id != missing
        assert any(isinstance(n, Notice) and missing in n.message for n in fake.notices)
    finally:
        await bridge.stop()


async def test_continue_without_sessions_opens_a_new_one(fake: FakeClaude) -> None:
    bridge = fake.bridge()
    started = await bridge.open(OpenRequest("continue"))
    await bridge.stop()
    assert started.how == "new"
    assert any(isinstance(n, Notice) for n in fake.notices)


async def test_explicit_session_ids(fake: FakeClaude) -> None:
    bridge = fake.bridge()
    chosen = str(uuid.uuid4())
    started = await bridge.open(OpenRequest("new", chosen))
    await collect(bridge.send("hi"))
    await bridge.stop()
    assert started.session_id == chosen
    with pytest.raises(UsageError, match="already exists"):
        await fake.bridge().open(OpenRequest("new", chosen))
    with pytest.raises(UsageError, match="UUID"):
        await fake.bridge().open(OpenRequest("new", "my-session"))


async def test_fork_left_without_a_turn_is_written_on_stop(fake: FakeClaude) -> None:
    parent = fake.bridge()
    p = await parent.open(OpenRequest("new"))
    await collect(parent.send("remember 42"))
    await parent.stop()

    bridge = fake.bridge()
    forked = await bridge.open(OpenRequest("fork", p.session_id))
    assert forked.how == "forked" and forked.session_id != p.session_id
    argv = (await fake.starts(2))[1]["argv"]
    assert argv[-5:] == [
        "--resume",
        p.session_id,
        "--fork-session",
        "--session-id",
        forked.session_id,
    ]
    await bridge.stop()

    child = fake.project / f"{forked.session_id}.jsonl"
    entries = [json.loads(x) for x in child.read_text().splitlines()]
    assert {e["sessionId"] for e in entries} == {forked.session_id}
    assert entries[0]["message"]["content"] == "remember 42"
    parent_file = fake.project / f"{p.session_id}.jsonl"
    assert {json.loads(x)["sessionId"] for x in parent_file.read_text().splitlines()} == {
        p.session_id
    }
    t = bridge.store.transcript(forked.session_id)
    assert [m.text for m in t.messages][:1] == ["remember 42"]


async def test_fork_with_a_turn_is_written_by_claude(fake: FakeClaude) -> None:
    parent = fake.bridge()
    p = await parent.open(OpenRequest("new"))
    await collect(parent.send("remember 42"))
    await parent.stop()
    bridge = fake.bridge()
    forked = await bridge.open(OpenRequest("fork", p.session_id))
    await collect(bridge.send("child turn"))
    await bridge.stop()
    texts = [m.text for m in bridge.store.transcript(forked.session_id).messages]
    assert texts[0] == "remember 42" and "child turn" in texts
    with pytest.raises(SessionNotFoundError):
        await fake.bridge().open(OpenRequest("fork", str(uuid.uuid4())))


async def test_resume_runs_in_the_sessions_own_directory(fake: FakeClaude, tmp_path: Path) -> None:
    other = tmp_path / "other-project"
    other.mkdir()
    first = fake.bridge(cwd=other)
    s = await first.open(OpenRequest("new"))
    await collect(first.send("made elsewhere"))
    await first.stop()
    bridge = fake.bridge()  # cwd: fake.cwd
    resumed = await bridge.open(OpenRequest("resume", s.session_id))
    await collect(bridge.send("again"))
    await bridge.stop()
    assert resumed.cwd == str(other)
    assert fake.events("start")[-1]["cwd"] == str(other)
    assert any(isinstance(n, Notice) and str(other) in n.message for n in fake.notices)


async def test_set_model_and_delete(fake: FakeClaude) -> None:
    bridge = fake.bridge()
    s = await bridge.open(OpenRequest("new"))
    await collect(bridge.send("hi"))
    await bridge.set_model("claude-other")
    assert fake.events("control_request")[-1]["request"] == {
        "subtype": "set_model",
        "model": "claude-other",
    }
    with pytest.raises(UsageError):
        await bridge.delete_session(s.session_id)  # still open
    assert [i.id for i in await bridge.list_sessions(fake.cwd)] == [s.session_id]
    await bridge.stop()
    other = fake.bridge()
    await other.delete_session(s.session_id)
    assert await other.list_sessions(None) == []
    assert bridge.status() == {"model": "fake-model", "cost_usd": 0.01}


async def test_permission_mode_and_mcp_from_config(fake: FakeClaude) -> None:
    from avatar.config import McpServer

    settings = Settings(permission="allow", mcp_servers={"files": McpServer(command="srv")})
    bridge = fake.bridge(settings, additional_dirs=[Path("/extra")])
    await bridge.open(OpenRequest("new"))
    await bridge.stop()
    argv = (await fake.starts(1))[0]["argv"]
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
    assert argv[argv.index("--permission-prompt-tool") + 1] == "stdio"
    assert argv[argv.index("--add-dir") + 1] == "/extra"
    assert "srv" in argv[argv.index("--mcp-config") + 1]


async def test_a_turn_left_unread_does_not_leak_into_the_next(fake: FakeClaude) -> None:
    bridge = fake.bridge()
    await bridge.open(OpenRequest("new"))
    try:
        stream = bridge.send("SLOW")
        async for event in stream:
            if isinstance(event, TextDelta):
                break  # the caller walks away mid-answer
        await stream.aclose()
        after = await collect(bridge.send("next"))
        assert text(after) == "Hello from fake claude."
        assert after[-1] == TurnFinished(stop_reason="end_turn")
        # Stopping at TurnFinished is not walking away: no interrupt follows.
        async for event in bridge.send("third"):
            if isinstance(event, TurnFinished):
                break
        await collect(bridge.send("fourth"))
    finally:
        await bridge.stop()
    assert [r["request"]["subtype"] for r in fake.events("control_request")] == ["interrupt"]
    assert len(fake.events("start")) == 1


async def test_set_model_during_a_turn_applies_to_the_next(fake: FakeClaude) -> None:
    bridge = fake.bridge()
    await bridge.open(OpenRequest("new"))
    try:
        async for event in bridge.send("hi"):
            if isinstance(event, TextDelta):
                await bridge.set_model("claude-later")
        assert fake.events("control_request") == []
        await collect(bridge.send("again"))
    finally:
        await bridge.stop()
    [req] = fake.events("control_request")
    assert req["request"] == {"subtype": "set_model", "model": "claude-later"}


async def test_a_dropped_turn_generator_is_finished_before_the_next(fake: FakeClaude) -> None:
    bridge = fake.bridge()
    await bridge.open(OpenRequest("new"))
    try:
        dropped = bridge.send("SLOW")
        async for event in dropped:
            if isinstance(event, TextDelta):
                break  # and never closed: the next turn must cope anyway
        after = await collect(bridge.send("next"))
        assert text(after) == "Hello from fake claude."
        await dropped.aclose()  # late finalisation does not disturb the session
        assert text(await collect(bridge.send("third"))) == "Hello from fake claude."
    finally:
        await bridge.stop()
