"""Acceptance 1–3 against the shared fake model server, for both APIs."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from avatar.bridges.base import OpenRequest
from avatar.core.events import (
    Error,
    PermissionRequested,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    UserMessage,
)
from tests.native.helpers import make_bridge, run_turn
from tests.support.model_server import FakeModelServer, Part, Reply

APIS = ["chat", "anthropic"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    return p


@pytest.mark.parametrize("api", APIS)
async def test_tool_call_writes_then_reads_back(
    api: str, project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    model_server.script(
        api,
        Reply.text("Writing.")
        + Reply.tool_call("write", {"path": "out/hello.txt", "content": "hi there\n"}),
        Reply.tool_call("read", {"path": "out/hello.txt"}),
        Reply.text("The file says hi there."),
    )
    bridge = make_bridge(project, tmp_path / "home", model_server, api)
    await bridge.start()
    started = await bridge.open(OpenRequest("new"))
    events = await run_turn(bridge, "write hello.txt then read it")
    await bridge.stop()

    assert (project / "out/hello.txt").read_text() == "hi there\n"
    assert isinstance(events[-1], TurnFinished) and events[-1].stop_reason == "end_turn"
    started_calls = [e.name for e in events if isinstance(e, ToolCallStarted)]
    assert started_calls == ["write", "read"]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert not any(e.is_error for e in finished)
    assert finished[1].output == "hi there"
    assert any(isinstance(e, PermissionRequested) and e.decision == "allow" for e in events)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)).endswith("hi there.")

    requests = model_server.requests_for(api)
    assert len(requests) == 3
    second = requests[1].conversation_texts()
    assert any("created out/hello.txt" in t for t in second)  # the write's result
    third = requests[2].all_text()
    assert "hi there" in third and "write hello.txt then read it" in third
    assert started.session_id and started.how == "new"


@pytest.mark.parametrize("api", APIS)
async def test_resume_after_restart_sends_the_whole_conversation(
    api: str, project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    home = tmp_path / "home"
    model_server.script(
        api,
        Reply.tool_call("ls", {}),
        Reply.text("I see nothing."),
        Reply.text("You asked me to list files."),
    )
    first = make_bridge(project, home, model_server, api)
    await first.start()
    sid = (await first.open(OpenRequest("new"))).session_id
    await run_turn(first, "list the files please")
    await first.stop()  # the "process" ends; only the file remains

    second = make_bridge(project, home, model_server, api)
    await second.start()
    started = await second.open(OpenRequest("resume", sid[:10]))
    assert started.session_id == sid and started.how == "resumed"
    await run_turn(second, "what did I ask?")
    await second.stop()

    last = model_server.requests_for(api)[-1]
    texts = last.conversation_texts()
    joined = "\n".join(texts)
    for expected in (
        "list the files please",
        "(empty directory)",
        "I see nothing.",
        "what did I ask?",
    ):
        assert expected in joined
    assert last.tool_names()[:3] == ["read", "write", "edit"]


async def test_continue_picks_the_newest_session_of_the_cwd(
    project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    home = tmp_path / "home"
    b = make_bridge(project, home, model_server)
    await b.start()
    await b.open(OpenRequest("new"))
    await run_turn(b, "one")
    await b.open(OpenRequest("new"))
    newest = b.session_id
    await run_turn(b, "two")
    await b.stop()
    b2 = make_bridge(project, home, model_server)
    await b2.start()
    started = await b2.open(OpenRequest("continue"))
    assert started.session_id == newest and started.how == "continued"
    await b2.stop()


@pytest.mark.parametrize("api", APIS)
async def test_steering_arrives_in_the_next_request(
    api: str, project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    steered = threading.Event()  # the answer's last piece waits for the steering
    model_server.script(
        api,
        Reply.text("", chunks=["Working", " on", " it"]).held(steered),
        Reply.text("Noted, using tabs."),
    )
    bridge = make_bridge(project, tmp_path / "home", model_server, api)
    await bridge.start()
    await bridge.open(OpenRequest("new"))
    events = []
    async for event in bridge.send("reformat the code"):
        events.append(event)
        if isinstance(event, TextDelta) and event.text == "Working":
            assert await bridge.steer("use tabs, not spaces")
            steered.set()
    await bridge.stop()
    requests = model_server.requests_for(api)
    assert len(requests) == 2
    assert "use tabs, not spaces" not in requests[0].all_text()
    assert requests[1].last_user_text().endswith("use tabs, not spaces")
    assert any(isinstance(e, UserMessage) for e in events)
    assert events[-1].stop_reason == "end_turn"


async def test_steering_with_no_turn_running_is_refused_not_kept(
    project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    # Refused, the caller queues the line as a turn of its own; it is never slipped into the
    # next turn ahead of that turn's own prompt.
    model_server.script("chat", Reply.text("First."), Reply.text("Second."))
    bridge = make_bridge(project, tmp_path / "home", model_server, "chat")
    await bridge.start()
    await bridge.open(OpenRequest("new"))
    assert not await bridge.steer("QUOKKA early")
    [event async for event in bridge.send("one")]
    assert not await bridge.steer("QUOKKA late")
    [event async for event in bridge.send("two")]
    await bridge.stop()
    assert not any("QUOKKA" in r.all_text() for r in model_server.requests_for("chat"))


@pytest.mark.parametrize("api", APIS)
async def test_abort_during_slow_stream_is_prompt_and_resumable(
    api: str, project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    home = tmp_path / "home"
    # The first piece at once, then a stream that would take 6 s more.
    slow = Reply(parts=(Part("text", chunks=("Part one.", " two.", " three."), delays=(0, 3, 3)),))
    model_server.script(api, slow, Reply.text("Resumed fine."))
    bridge = make_bridge(project, home, model_server, api)
    await bridge.start()
    sid = (await bridge.open(OpenRequest("new"))).session_id
    events: list[object] = []

    async def consume() -> None:
        async for event in bridge.send("write a long essay"):
            events.append(event)

    task = asyncio.create_task(consume())
    while not any(isinstance(e, TextDelta) for e in events):
        await asyncio.sleep(0.01)
    await bridge.cancel()
    await asyncio.wait_for(task, 60)
    assert isinstance(events[-1], TurnFinished) and events[-1].stop_reason == "cancelled"
    await bridge.stop()

    again = make_bridge(project, home, model_server, api)
    await again.start()
    await again.open(OpenRequest("resume", sid))
    result = await run_turn(again, "go on")
    await again.stop()
    assert not any(isinstance(e, Error) for e in result)
    assert result[-1].stop_reason == "end_turn"
    joined = "\n".join(model_server.requests_for(api)[-1].conversation_texts())
    assert "write a long essay" in joined and "Part one." in joined and "go on" in joined


@pytest.mark.parametrize("api", APIS)
async def test_abort_kills_a_running_bash_and_records_the_call(
    api: str, project: Path, tmp_path: Path, model_server: FakeModelServer
) -> None:
    model_server.script(
        api,
        # Sleeps past the wait below: a cancel that waited for them would fail it.
        Reply.tool_call("bash", {"command": "sleep 600 & sleep 600; echo done"}),
        Reply.text("ok"),
    )
    home = tmp_path / "home"
    bridge = make_bridge(project, home, model_server, api)
    await bridge.start()
    sid = (await bridge.open(OpenRequest("new"))).session_id
    events: list[object] = []

    async def consume() -> None:
        async for event in bridge.send("run it"):
            events.append(event)

    task = asyncio.create_task(consume())
    while not any(isinstance(e, ToolCallStarted) for e in events):
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)
    await bridge.cancel()
    await asyncio.wait_for(task, 60)
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished and finished[0].is_error
    await bridge.stop()
    again = make_bridge(project, home, model_server, api)
    await again.start()
    await again.open(OpenRequest("resume", sid))
    result = await run_turn(again, "what happened?")
    await again.stop()
    assert result[-1].stop_reason == "end_turn"
    assert "interrupted by the user" in model_server.requests_for(api)[-1].all_text()
