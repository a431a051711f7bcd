"""ACP session updates → avatar events, on the JSON agents write (built with the SDK's schema,
the reference for what a valid update is, and sent as its JSON)."""

from __future__ import annotations

import acp
from acp.schema import (
    AgentPlanContentUpdate,
    AgentPlanRemovedUpdate,
    ConfigOptionUpdate,
    Cost,
    EmbeddedResourceContentBlock,
    FileEditToolCallContent,
    ImageContentBlock,
    PlanEntry,
    PlanItems,
    PlanUpdateItems,
    PlanUpdateMarkdown,
    PromptResponse,
    ResourceContentBlock,
    SessionInfoUpdate,
    TerminalToolCallContent,
    TextResourceContents,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
)
from acp.schema import (
    Usage as AcpUsage,
)
from pydantic import BaseModel

from avatar.bridges.acp import wire
from avatar.core.events import (
    BaseEvent,
    FileDiff,
    ModeChanged,
    Plan,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallUpdated,
    Usage,
    UserMessage,
)


def _sent(model: BaseModel) -> dict[str, object]:
    """`model` as an agent writes it on the wire."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def translate(update: BaseModel, terminal: wire.TerminalReader | None = None) -> list[BaseEvent]:
    """The events for `update` as avatar reads it off the wire."""
    return wire.translate(_sent(update), terminal)


def prompt_usage(response: PromptResponse) -> Usage | None:
    """The usage of a `session/prompt` answer as avatar reads it off the wire."""
    return wire.prompt_answer(_sent(response))[1]


def test_message_chunks() -> None:
    assert translate(acp.update_agent_message_text("hi")) == [TextDelta(text="hi")]
    assert translate(acp.update_user_message_text("q")) == [UserMessage(text="q")]
    assert translate(acp.update_agent_thought_text("")) == []
    image = ImageContentBlock(type="image", data="AA==", mime_type="image/png")
    assert translate(acp.update_agent_message(image)) == [TextDelta(text="[image]")]
    link = ResourceContentBlock(type="resource_link", name="spec.md", uri="file:///spec.md")
    assert translate(acp.update_agent_message(link)) == [TextDelta(text="[spec.md]")]
    embedded = EmbeddedResourceContentBlock(
        type="resource", resource=TextResourceContents(uri="file:///a", text="body")
    )
    assert translate(acp.update_user_message(embedded)) == [UserMessage(text="body")]
    # Gemini says its approval mode changed as a chunk of its own: a mode change, not text.
    gemini = acp.update_agent_message_text("[MODE_UPDATE] plan")
    assert translate(gemini) == [ModeChanged(mode="plan")]
    said = acp.update_agent_message_text("see [MODE_UPDATE] plan")
    assert translate(said) == [TextDelta(text="see [MODE_UPDATE] plan")]


def test_tool_calls() -> None:
    start = ToolCallStart(
        session_update="tool_call",
        tool_call_id="c1",
        title="Run tests",
        kind="execute",
        raw_input={"command": "pytest"},
        field_meta={"toolName": "Bash"},
    )
    assert translate(start) == [
        ToolCallStarted(
            id="c1", name="Bash", title="Run tests", kind="execute", input={"command": "pytest"}
        )
    ]
    done_at_once = ToolCallStart(
        session_update="tool_call",
        tool_call_id="c2",
        title="Edit",
        status="failed",
        raw_output={"e": 1},
    )
    events = translate(done_at_once)
    assert events[1] == ToolCallFinished(id="c2", output='{"e": 1}', is_error=True)
    progress = ToolCallProgress(
        session_update="tool_call_update", tool_call_id="c1", status="in_progress"
    )
    assert translate(progress) == [ToolCallUpdated(id="c1", status="in_progress")]
    finished = ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id="c1",
        status="completed",
        content=[
            FileEditToolCallContent(type="diff", path="/w/a.py", new_text="x"),
            TerminalToolCallContent(type="terminal", terminal_id="term-1"),
        ],
    )
    out = translate(finished, terminal=lambda tid: f"output of {tid}")
    diff = FileDiff(path="/w/a.py", old_text=None, new_text="x")
    assert out == [
        ToolCallFinished(id="c1", output="edited /w/a.py\noutput of term-1", diffs=[diff])
    ]
    # The diff reaches the screen with the line of the file it starts at (claude-agent-acp
    # names one location per diff once the edit is made).
    located = ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id="c3",
        status="in_progress",
        content=[
            FileEditToolCallContent(type="diff", path="/w/b.py", old_text="a", new_text="b"),
            FileEditToolCallContent(type="diff", path="/w/b.py", old_text="c", new_text="d"),
        ],
        locations=[ToolCallLocation(path="/w/b.py", line=12), ToolCallLocation(path="/w/b.py")],
    )
    (update,) = translate(located)
    assert isinstance(update, ToolCallUpdated)
    assert update.diffs == [FileDiff("/w/b.py", "a", "b", 12), FileDiff("/w/b.py", "c", "d")]


def test_plans() -> None:
    entries = [PlanEntry(content="a", priority="high", status="in_progress")]
    (plan,) = translate(acp.update_plan(entries))
    assert isinstance(plan, Plan) and plan.entries[0].status == "in_progress"
    items = AgentPlanContentUpdate(
        session_update="plan_update",
        plan=PlanUpdateItems(type="items", plan_id="p", entries=entries),
    )
    assert translate(items)[0] == plan
    markdown = AgentPlanContentUpdate(
        session_update="plan_update",
        plan=PlanUpdateMarkdown(type="markdown", plan_id="p", content="# do"),
    )
    assert translate(markdown)[0].entries[0].content == "# do"  # type: ignore[attr-defined]
    removed = AgentPlanRemovedUpdate(session_update="plan_removed", plan_id="p")
    assert translate(removed) == [Plan(entries=[])]
    assert PlanItems  # imported for completeness of the union


def test_usage_title_and_unknown() -> None:
    euros = UsageUpdate(
        session_update="usage_update", used=5, size=10, cost=Cost(amount=1, currency="EUR")
    )
    assert translate(euros) == [Usage(context_used=5, context_size=10)]
    assert translate(SessionInfoUpdate(session_update="session_info_update")) == []
    assert (
        translate(ConfigOptionUpdate(session_update="config_option_update", config_options=[]))
        == []
    )
    assert wire.translate({"sessionUpdate": "no_such_update"}) == []
    usage = prompt_usage(
        PromptResponse(
            stop_reason="end_turn",
            usage=AcpUsage(total_tokens=3, input_tokens=2, output_tokens=1, cached_write_tokens=7),
        )
    )
    assert usage == Usage(input_tokens=2, output_tokens=1, cache_write_tokens=7)
    assert prompt_usage(PromptResponse(stop_reason="end_turn")) is None
    # Gemini's counts, in its `_meta` (it sends no `usage`).
    gemini = PromptResponse(
        stop_reason="end_turn",
        field_meta={"quota": {"token_count": {"input_tokens": 1200, "output_tokens": 34}}},
    )
    assert prompt_usage(gemini) == Usage(input_tokens=1200, output_tokens=34)
    assert wire.prompt_answer({}) == ("end_turn", None)  # (one that says nothing)
