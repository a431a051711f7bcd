"""ClaudeBridge processes, turns, permissions, scope and interrupts (with a fake claude)."""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from avatar.bridges.base import OpenRequest
from avatar.bridges.claude import bridge as claude_module
from avatar.bridges.claude.bridge import write_fork
from avatar.core.config import Scope, Settings
from avatar.core.errors import ProviderError
from avatar.core.events import (
    Error,
    Notice,
    PermissionRequested,
    TextDelta,
    ToolCallFinished,
    TurnFinished,
    Usage,
)
from avatar.providers.registry import BUILTIN
from tests.claude.conftest import FakeClaude, collect
from tests.support.protected import PROTECTED, plant, snapshot


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
        events = await _cancel_after_text(bridge, "SLOW")
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


async def test_set_model_between_turns_and_status(fake: FakeClaude) -> None:
    bridge = fake.bridge()
    await bridge.open(OpenRequest("new"))
    await collect(bridge.send("hi"))
    assert bridge.model_in_use == "fake-model"  # as claude reported it
    pid = bridge.process_pid
    assert pid is not None and bridge.status()["pid"] == pid
    await bridge.set_model("claude-other")
    assert fake.events("control_request")[-1]["request"] == {
        "subtype": "set_model",
        "model": "claude-other",
    }
    assert bridge.model_in_use == "claude-other"
    await bridge.stop()
    assert bridge.process_pid is None
    assert bridge.status() == {"model": "claude-other", "cost_usd": 0.01}
    assert not any(isinstance(n, Notice) for n in fake.notices)


async def test_set_model_without_a_process_is_the_next_ones_model(fake: FakeClaude) -> None:
    bridge = fake.bridge()
    await bridge.open(OpenRequest("new"))
    await collect(bridge.send("hi"))
    await bridge.stop()
    await bridge.set_model("claude-late")
    assert bridge.model_in_use == "claude-late"
    try:
        await collect(bridge.send("after"))  # restarts claude with --resume
    finally:
        await bridge.stop()
    assert fake.events("control_request") == []
    argv = fake.events("start")[-1]["argv"]
    assert argv[argv.index("--model") + 1] == "claude-late" and "--resume" in argv


async def test_permission_mode_and_mcp_from_config(fake: FakeClaude) -> None:
    from avatar.core.config import McpServer

    settings = Settings(permission="allow", mcp_servers={"files": McpServer(command="srv")})
    bridge = fake.bridge(settings, additional_dirs=[Path("/extra")])
    await bridge.open(OpenRequest("new"))
    await bridge.stop()
    argv = (await fake.starts(1))[0]["argv"]
    assert argv[argv.index("--permission-mode") + 1] == "default"
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
        assert bridge.running  # an abandoned turn: open until the next send ends it
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
    fake.extra_env["FAKE_CLAUDE_SLOW_CHUNKS"] = "5"  # so the turn is still running
    bridge = fake.bridge()
    await bridge.open(OpenRequest("new"))
    try:
        async for event in bridge.send("SLOW"):
            if isinstance(event, TextDelta) and bridge.running:
                await bridge.set_model("claude-later")
        assert not bridge.running
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


async def test_the_scope_refuses_before_the_policy_is_asked(fake: FakeClaude) -> None:
    fake.allow = True
    settings = Settings(scope=Scope(shell_commands=["ls"]))
    bridge = fake.bridge(settings)
    await bridge.open(OpenRequest("new"))
    try:
        events = await collect(bridge.send("TOOL please"))
        outside = await collect(bridge.send("WRITE /etc/avatar-test-file"))
        inside = await collect(bridge.send(f"WRITE {fake.cwd / 'ok.txt'}"))
    finally:
        await bridge.stop()
    [perm] = [e for e in events if isinstance(e, PermissionRequested)]
    assert perm.decision == "deny" and perm.reason and "touch" in perm.reason
    [refused] = [e for e in outside if isinstance(e, PermissionRequested)]
    assert refused.decision == "deny" and "outside" in (refused.reason or "")
    [allowed] = [e for e in inside if isinstance(e, PermissionRequested)]
    assert allowed.decision == "allow"
    assert [a.title for a in fake.asked] == [allowed.title]  # only the one inside the scope
    verdicts = [v["verdict"] for v in fake.events("verdict")]
    assert verdicts[0] == {"behavior": "deny", "message": perm.reason}
    assert verdicts[1]["message"] == refused.reason


async def test_a_scope_rooted_where_claude_runs_plus_added_dirs(
    fake: FakeClaude, tmp_path: Path
) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    fake.allow = True
    bridge = fake.bridge(additional_dirs=[extra])
    await bridge.open(OpenRequest("new"))
    try:
        events = await collect(bridge.send(f"WRITE {extra / 'x.txt'}"))
        denied = await collect(bridge.send(f"WRITE {fake.cwd / '.env'}"))
    finally:
        await bridge.stop()
    assert [e.decision for e in events if isinstance(e, PermissionRequested)] == ["allow"]
    [perm] = [e for e in denied if isinstance(e, PermissionRequested)]
    assert perm.decision == "deny" and "deny pattern" in (perm.reason or "")


async def test_protected_paths_are_refused_under_allow(fake: FakeClaude) -> None:
    """Claude's Write of any protected path is denied (the file stays as it was) even when the
    policy allows everything and no deny pattern names it; `allow_protected` lets one through."""
    fake.allow = True
    plant(fake.cwd)
    before = snapshot(fake.cwd)
    bridge = fake.bridge(Settings(scope=Scope(deny=[], allow_protected=[".git/hooks"])))
    await bridge.open(OpenRequest("new"))
    try:
        refused = [await collect(bridge.send(f"WRITE {fake.cwd / rel}")) for rel in PROTECTED]
        hook = fake.cwd / ".git/hooks/pre-commit"
        allowed = await collect(bridge.send(f"WRITE {hook}"))
    finally:
        await bridge.stop()
    for rel, events in zip(PROTECTED, refused, strict=True):
        if rel == ".git/hooks/pre-commit":
            continue
        [perm] = [e for e in events if isinstance(e, PermissionRequested)]
        assert perm.decision == "deny" and "protected path" in (perm.reason or ""), rel
    assert [e.decision for e in allowed if isinstance(e, PermissionRequested)] == ["allow"]
    assert hook.read_text() == "written by fake claude\n"
    after = snapshot(fake.cwd)
    assert {k: v for k, v in after.items() if k != ".git/hooks/pre-commit"} == {
        k: v for k, v in before.items() if k != ".git/hooks/pre-commit"
    }


async def test_cancel_while_the_policy_is_deciding(fake: FakeClaude) -> None:
    asking = asyncio.Event()

    async def never_answers(request: PermissionRequested) -> bool:
        asking.set()
        await asyncio.Event().wait()
        return True

    bridge = fake.bridge(permission=never_answers)
    await bridge.open(OpenRequest("new"))
    try:
        turn = asyncio.ensure_future(collect(bridge.send("TOOL please")))
        await asyncio.wait_for(asking.wait(), 10)
        assert bridge.running
        await bridge.cancel()
        events = await asyncio.wait_for(turn, 10)
        assert not bridge.running
        after = await collect(bridge.send("next"))
    finally:
        await bridge.stop()
    [perm] = [e for e in events if isinstance(e, PermissionRequested)]
    assert perm.decision == "deny" and perm.reason == "the turn was cancelled"
    assert events[-1] == TurnFinished(stop_reason="cancelled")
    assert text(after) == "Hello from fake claude."
    assert fake.events("verdict")[0]["verdict"]["behavior"] == "deny"


async def test_a_confirmed_interrupt_that_does_not_end_the_turn_stops_claude(
    fake: FakeClaude, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(claude_module, "INTERRUPT_GRACE", 0.5)
    fake.extra_env["FAKE_CLAUDE_DEAF"] = "1"  # confirms the interrupt, streams on
    bridge = fake.bridge()
    started = await bridge.open(OpenRequest("new"))
    try:
        events = await _cancel_after_text(bridge, "SLOW")
        assert events[-1] == TurnFinished(stop_reason="cancelled")
        assert bridge.process_pid is None
        after = await collect(bridge.send("next"))
        assert text(after) == "Hello from fake claude."
    finally:
        await bridge.stop()
    starts = fake.events("start")
    assert starts[1]["argv"][starts[1]["argv"].index("--resume") + 1] == started.session_id


async def test_write_fork_relabels_every_entry(tmp_path: Path) -> None:
    source = tmp_path / "a.jsonl"
    rows = [{"type": "user", "sessionId": "old", "n": 1}, {"type": "summary", "n": 2}]
    source.write_text("\n".join(json.dumps(r) for r in rows) + "\n{torn")
    target = tmp_path / "deep" / "b.jsonl"
    write_fork(source, target, "new")
    got = [json.loads(x) for x in target.read_text().splitlines()]
    assert got == [{"type": "user", "sessionId": "new", "n": 1}, {"type": "summary", "n": 2}]
    assert [p.name for p in target.parent.iterdir()] == ["b.jsonl"]  # no temp file left
