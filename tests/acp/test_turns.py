"""Turns against one shared fake agent: the event mapping, permission, files, terminals, cancel.

The agent is started once for the module and reconfigured per test (`_fake/configure`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from avatar.core.config import Scope, Settings
from avatar.core.events import (
    CommandsAvailable,
    ModeChanged,
    Notice,
    PermissionRequested,
    Plan,
    TextDelta,
    ThinkingDelta,
    TitleChanged,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallUpdated,
    TurnFinished,
    Usage,
)
from avatar.policy.permissions import Answer
from tests.acp.conftest import Harness, build, opened, text_of

pytestmark = pytest.mark.asyncio(loop_scope="module")

DEFAULTS = {
    "rich": False,
    "permission": False,
    "fs_read": None,
    "fs_write": None,
    "terminal": None,
    "chunk_delay": 0.0,
    "ignore_cancel": False,
    "after_reply": False,
}

allow = {"value": False}


async def policy(request: PermissionRequested) -> Answer:
    return "allow" if allow["value"] else "deny"  # the policy's words, read by the bridge


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Harness]:
    root = tmp_path_factory.mktemp("turns")
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    settings = Settings(scope=Scope(deny=[".git/**", "**/.env", "private/*"]))
    async with opened(build(root, "load,list", permission=policy, settings=settings)) as h:
        yield h


@pytest_asyncio.fixture(loop_scope="module")
async def h(shared: Harness) -> Harness:
    await shared.configure(**DEFAULTS)
    shared.emitted.clear()
    shared.asked.clear()
    allow["value"] = False
    return shared


async def test_rich_updates_map_to_events(h: Harness) -> None:
    await h.configure(rich=True)
    events = await h.turn("show me")
    types = [type(e) for e in events]
    assert types[:9] == [
        ThinkingDelta,
        ToolCallStarted,
        ToolCallUpdated,
        ToolCallFinished,
        Plan,
        Usage,
        TitleChanged,
        CommandsAvailable,
        ModeChanged,
    ]
    started = events[1]
    assert isinstance(started, ToolCallStarted)
    assert (started.id, started.kind, started.title, started.input) == (
        "t1",
        "read",
        "Read README",
        {"path": "README.md"},
    )
    finished = events[3]
    assert isinstance(finished, ToolCallFinished) and finished.output == "file body"
    plan = events[4]
    assert isinstance(plan, Plan) and [e.content for e in plan.entries] == ["step one", "step two"]
    usage = events[5]
    assert isinstance(usage, Usage)
    assert (usage.context_used, usage.context_size, usage.cost_usd) == (1234, 200000, 0.25)
    assert usage.context_percent == pytest.approx(0.617)
    assert isinstance(events[6], TitleChanged) and events[6].title == "Fake title"
    assert isinstance(events[7], CommandsAvailable) and events[7].commands == ["review"]
    assert isinstance(events[8], ModeChanged) and events[8].mode == "plan"
    assert all(isinstance(e, TextDelta) for e in events[9:-2])
    assert "to 'show me'" in text_of(events)
    turn_usage, end = events[-2:]
    assert isinstance(turn_usage, Usage) and (
        turn_usage.input_tokens,
        turn_usage.output_tokens,
    ) == (
        20,
        10,
    )
    assert isinstance(end, TurnFinished) and end.stop_reason == "end_turn"
    assert not any(e.replay for e in events)


async def test_updates_after_the_turn_go_to_the_sink(h: Harness) -> None:
    await h.configure(after_reply=True)
    events = await h.turn("title later")
    assert not any(isinstance(e, TitleChanged) for e in events)
    for _ in range(50):
        if h.emitted:
            break
        await asyncio.sleep(0.02)
    assert [(e.type, e.replay) for e in h.emitted] == [("title", False)]


async def test_permission_denied_by_default(h: Harness) -> None:
    await h.configure(permission=True)
    events = await h.turn("delete it")
    assert "permission: no" in text_of(events)
    (asked,) = h.asked
    assert (asked.id, asked.title, asked.kind, asked.decision) == (
        "perm-1",
        "Delete build/",
        "delete",
        "pending",
    )
    (event,) = [e for e in events if isinstance(e, PermissionRequested)]
    assert event.decision == "deny" and "denied" in (event.reason or "")


async def test_permission_allowed_picks_allow_once(h: Harness) -> None:
    await h.configure(permission=True)
    allow["value"] = True
    events = await h.turn("delete it")
    assert "permission: yes" in text_of(events)
    (event,) = [e for e in events if isinstance(e, PermissionRequested)]
    assert event.decision == "allow"


async def test_file_read_inside_cwd(h: Harness) -> None:
    (h.cwd / "notes.txt").write_text("hello from notes")
    await h.configure(fs_read=str(h.cwd / "notes.txt"))
    assert "read ok: hello from notes" in text_of(await h.turn("read"))


@pytest.mark.parametrize("where", ["outside", "dotdot", "deny"])
async def test_file_read_outside_is_refused(h: Harness, where: str) -> None:
    (h.cwd / "private").mkdir(exist_ok=True)
    (h.cwd / "private" / "key.txt").write_text("k")
    path = {
        "outside": str(h.root / "outside" / "secret.txt"),
        "dotdot": str(h.cwd / ".." / "outside" / "secret.txt"),
        "deny": str(h.cwd / "private" / "key.txt"),
    }[where]
    await h.configure(fs_read=path)
    text = text_of(await h.turn("read"))
    assert "read refused" in text and "top secret" not in text


async def test_file_write_inside_and_outside(h: Harness) -> None:
    await h.configure(fs_write=str(h.cwd / "sub" / "out.txt"))
    assert "write ok" in text_of(await h.turn("write"))
    assert (h.cwd / "sub" / "out.txt").read_text() == "written by the fake agent\n"
    target = h.root / "outside" / "evil.txt"
    await h.configure(fs_write=str(target))
    assert "write refused" in text_of(await h.turn("write"))
    assert not target.exists()


async def test_terminal_runs_a_real_command(h: Harness) -> None:
    await h.configure(terminal="echo hi from $0; pwd; exit 3")
    text = text_of(await h.turn("run"))
    assert f"terminal exit 3: hi from /bin/sh\n{h.cwd}" in text


async def test_cancel_ends_the_turn(h: Harness) -> None:
    await h.configure(chunk_delay=0.2)
    seen = []
    async for event in h.bridge.send("slow"):
        seen.append(event)
        if isinstance(event, TextDelta) and len(seen) == 1:
            await h.bridge.cancel()
    assert isinstance(seen[-1], TurnFinished) and seen[-1].stop_reason == "cancelled"
    assert h.requests("session/cancel")


async def test_cancel_of_an_agent_that_ignores_it(h: Harness) -> None:
    await h.configure(chunk_delay=1.0, ignore_cancel=True)
    stream = h.bridge.send("stubborn")
    first = await anext(stream)
    assert isinstance(first, TextDelta)
    await h.bridge.cancel()
    rest = [e async for e in stream]
    assert isinstance(rest[-1], TurnFinished) and rest[-1].stop_reason == "cancelled"
    # Let the stubborn prompt finish inside the agent before the next test uses it.
    await asyncio.sleep(1.3)


async def test_the_rest_of_a_turn_nobody_listens_to_is_not_said_outside_it(h: Harness) -> None:
    await h.configure(chunk_delay=0.15, ignore_cancel=True)
    stream = h.bridge.send("abandoned")
    first = await anext(stream)
    assert isinstance(first, TextDelta)
    await stream.aclose()  # (the caller stopped listening: the turn is cancelled)
    for _ in range(100):
        if h.requests("session/cancel"):
            break
        await asyncio.sleep(0.02)
    assert h.requests("session/cancel")
    await asyncio.sleep(1.0)  # (the agent, ignoring the cancel, says the rest of its answer)
    assert not [e for e in h.emitted if isinstance(e, Notice)], h.emitted


async def test_turn_after_cancel_works(h: Harness) -> None:
    events = await h.turn("after")
    assert "to 'after'" in text_of(events)
    assert events[-1] == TurnFinished(stop_reason="end_turn")


async def test_session_list_pages_show_the_session(h: Harness) -> None:
    """The listing continue-last relies on, against the running agent."""
    sessions = await h.bridge.agent_sessions() or []
    assert [s.id for s in sessions] == [h.bridge.session_id]
    assert sessions[0].provider == "fake" and sessions[0].updated is not None
