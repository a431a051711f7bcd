"""Compaction: cut points, strategies, automatic/manual/overflow, resume after compaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from avatar.bridges.base import OpenRequest
from avatar.core.config import ModelConfig, ProviderConfig, Settings
from avatar.core.events import Notice, TurnFinished
from avatar.native.agent.compaction import (
    NoCompaction,
    SlidingWindow,
    SummaryCompaction,
    choose_cut,
    strategy_for,
    transcript_for_summary,
)
from avatar.native.agent.context import SUMMARY_PREFIX
from avatar.native.llm.types import Message, ToolCall
from tests.native.helpers import make_bridge, run_turn
from tests.support.model_server import FakeModelServer, Reply


def conv() -> list[Message]:
    return [
        Message("user", "a" * 400, entry_id="u1"),
        Message("assistant", "", [ToolCall("c1", "ls", {})], entry_id="a1"),
        Message("tool", "b" * 400, tool_call_id="c1", entry_id="t1"),
        Message("assistant", "done", entry_id="a2"),
        Message("user", "c" * 40, entry_id="u2"),
        Message("assistant", "d" * 40, entry_id="a3"),
    ]


def test_cut_never_splits_a_tool_call_from_its_result() -> None:
    msgs = conv()
    for keep in range(0, 400, 7):
        for allow in (True, False):
            cut = choose_cut(msgs, keep, allow_assistant=allow, force=False)
            assert cut is not None and msgs[cut].role != "tool"
            if not allow:
                assert msgs[cut].role == "user"


def test_cut_choices() -> None:
    msgs = conv()
    assert choose_cut(msgs, 10_000, allow_assistant=False, force=False) == 4
    assert choose_cut(msgs, 10_000, allow_assistant=True, force=False) == 4
    assert choose_cut(msgs, 10_000, allow_assistant=True, force=True) == 4
    assert choose_cut(msgs, 30, allow_assistant=False, force=False) == 4
    assert choose_cut(msgs, 5, allow_assistant=True, force=False) == 5  # inside the last turn
    one_turn = conv()[:4]  # one user message, then a long tool-using answer
    assert choose_cut(one_turn, 5, allow_assistant=True, force=False) == 3
    assert choose_cut(one_turn, 5, allow_assistant=False, force=False) is None
    assert choose_cut([Message("user", "x")], 10, allow_assistant=True, force=True) is None


async def test_strategies() -> None:
    msgs = conv()

    async def summarize(part: list[Message]) -> str:
        return f"{len(part)} messages"

    assert await NoCompaction().plan(msgs, keep_tokens=10, summarize=None) is None
    sliding = await SlidingWindow().plan(msgs, keep_tokens=30, summarize=None)
    assert sliding is not None and sliding.first_kept == "u2" and sliding.summary is None
    summary = await SummaryCompaction().plan(msgs, keep_tokens=30, summarize=summarize)
    assert summary is not None and summary.summary == "4 messages" and summary.first_kept == "u2"
    assert isinstance(strategy_for("sliding"), SlidingWindow)
    assert isinstance(strategy_for(None), SummaryCompaction)


def test_transcript_for_summary_clips() -> None:
    text = transcript_for_summary(conv(), 10_000)
    assert "[assistant called ls]" in text and "[tool result" in text
    long = transcript_for_summary([Message("user", "x" * 50_000)], 1000)
    assert len(long) < 1100 and "omitted" in long


def tiny_settings(
    server: FakeModelServer, compaction: str = "summary", **native: object
) -> Settings:
    return Settings(
        default_model="tiny",
        models=[ModelConfig(id="tiny", base_url=server.openai_base_url, context_window=2000)],
        providers={"native": ProviderConfig(compaction=compaction, **native)},  # type: ignore[arg-type]
    )


async def test_auto_summary_compaction_and_resume_rebuilds_it(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    home, project = tmp_path / "home", tmp_path / "p"
    project.mkdir()
    model_server.script(
        "chat",
        Reply.text("answer one").with_usage(1900, 10),  # context now over 0.8 × 2000
        Reply.text("EARLIER: the user asked for task one"),  # the summary call
        Reply.text("answer two"),
        Reply.text("answer three"),
    )
    settings = tiny_settings(model_server)
    b = make_bridge(project, home, model_server, settings=settings, model="tiny")
    await b.start()
    sid = (await b.open(OpenRequest("new"))).session_id
    await run_turn(b, "task one " + "x" * 3000)
    events = await run_turn(b, "task two")
    await b.stop()
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert any("context compacted (summary)" in n for n in notices)
    reqs = model_server.requests_for("chat")
    assert "condense" in reqs[1].system_text()
    assert "task one" in reqs[1].all_text()
    main = reqs[2].all_text()
    assert "EARLIER: the user asked for task one" in main and "x" * 3000 not in main
    assert "task two" in main

    b2 = make_bridge(project, home, model_server, settings=settings, model="tiny")
    await b2.start()
    await b2.open(OpenRequest("resume", sid))
    await run_turn(b2, "task three")
    await b2.stop()
    resumed = model_server.requests_for("chat")[-1]
    texts = resumed.conversation_texts()
    assert texts[0].startswith(SUMMARY_PREFIX)
    assert "x" * 3000 not in resumed.all_text()
    assert "task two" in resumed.all_text() and "task three" in resumed.all_text()


async def test_sliding_window_drops_oldest_turns(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    model_server.script("chat", Reply.text("one").with_usage(1900, 10), Reply.text("two"))
    settings = tiny_settings(model_server, "sliding")
    b = make_bridge(project, tmp_path / "h", model_server, settings=settings, model="tiny")
    await b.start()
    await b.open(OpenRequest("new"))
    await run_turn(b, "old " + "y" * 5000)
    await run_turn(b, "new question")
    await b.stop()
    reqs = model_server.requests_for("chat")
    assert len(reqs) == 2  # no summary call
    texts = reqs[1].conversation_texts()
    assert texts == ["new question"]


async def test_no_auto_compaction_when_off(tmp_path: Path, model_server: FakeModelServer) -> None:
    project = tmp_path / "p"
    project.mkdir()
    model_server.script("chat", Reply.text("one").with_usage(1900, 10), Reply.text("two"))
    settings = tiny_settings(model_server, auto_compact=False)
    b = make_bridge(project, tmp_path / "h", model_server, settings=settings, model="tiny")
    await b.start()
    await b.open(OpenRequest("new"))
    await run_turn(b, "first")
    await run_turn(b, "second")
    await b.stop()
    assert len(model_server.requests_for("chat")) == 2
    assert "first" in model_server.requests_for("chat")[1].all_text()


# An answer long enough that a summary of the conversation is smaller than the conversation.
LONG = "a1 " + "details of the plan " * 250


async def test_compacting_a_small_context_is_a_no_op_that_says_so(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    model_server.script("chat", Reply.text("a1"))
    b = make_bridge(project, tmp_path / "h", model_server)
    await b.start()
    await b.open(OpenRequest("new"))
    await run_turn(b, "q1")
    message = await b.compact()
    assert message.startswith("nothing to compact: the conversation (~")
    assert b.status()["compactions"] == 0
    assert len(model_server.requests_for("chat")) == 1  # no summary was asked for
    await b.stop()


async def test_manual_compact(tmp_path: Path, model_server: FakeModelServer) -> None:
    project = tmp_path / "p"
    project.mkdir()
    model_server.script(
        "chat", Reply.text(LONG), Reply.text("a2"), Reply.text("SUMMARY-X"), Reply.text("a3")
    )
    b = make_bridge(project, tmp_path / "h", model_server)
    await b.start()
    await b.open(OpenRequest("new"))
    await run_turn(b, "q1")
    await run_turn(b, "q2")
    message = await b.compact()
    assert message.startswith("context compacted (summary)")
    assert b.status()["compactions"] == 1
    await run_turn(b, "q3")
    await b.stop()
    last = model_server.requests_for("chat")[-1].conversation_texts()
    assert "SUMMARY-X" in last[0] and "q1" not in "\n".join(last)
    assert last[-1] == "q3"


async def test_context_overflow_error_compacts_and_retries(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    model_server.script(
        "chat",
        Reply.text("a1"),
        Reply.error(400, "This model's maximum context length is 128000 tokens."),
        Reply.text("SHORTER"),
        Reply.text("a2"),
    )
    b = make_bridge(project, tmp_path / "h", model_server)
    await b.start()
    await b.open(OpenRequest("new"))
    await run_turn(b, "q1")
    events = await run_turn(b, "q2")
    await b.stop()
    assert isinstance(events[-1], TurnFinished) and events[-1].stop_reason == "end_turn"
    assert "SHORTER" in model_server.requests_for("chat")[-1].all_text()


@pytest.mark.parametrize("strategy", ["none"])
async def test_manual_compact_with_none_uses_a_summary(
    strategy: str, tmp_path: Path, model_server: FakeModelServer
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    model_server.script("chat", Reply.text(LONG), Reply.text("a2"), Reply.text("S"))
    settings = Settings(providers={"native": ProviderConfig(compaction=strategy)})  # type: ignore[arg-type]
    b = make_bridge(project, tmp_path / "h", model_server, settings=settings)
    await b.start()
    await b.open(OpenRequest("new"))
    await run_turn(b, "q1")
    await run_turn(b, "q2")
    assert (await b.compact()).startswith("context compacted")
    await b.stop()
