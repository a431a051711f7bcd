"""Translate ACP `session/update` payloads into avatar's event model.

Matches on the SDK's own typed update classes (`acp.schema`): one case per kind of update,
each reading the fields its class declares. Kinds avatar shows nothing for (config option
updates, a plan kept in a file) translate to nothing, and so does anything that is not an
update at all.

This module imports the SDK (`import acp` costs about a second): the client side
(`avatar.bridges.acp.client`) imports it, and the bridge loads that only once the agent is
spawning, so the import runs while the agent boots (DESIGN §1).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from acp.schema import (
    AgentMessageChunk,
    AgentPlanContentUpdate,
    AgentPlanRemovedUpdate,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AudioContentBlock,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    ContentToolCallContent,
    CurrentModeUpdate,
    EmbeddedResourceContentBlock,
    FileEditToolCallContent,
    ImageContentBlock,
    PlanUpdateItems,
    PlanUpdateMarkdown,
    ResourceContentBlock,
    SessionInfoUpdate,
    TerminalToolCallContent,
    TextContentBlock,
    TextResourceContents,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
    UserMessageChunk,
)

from avatar.core.events import (
    BaseEvent,
    CommandsAvailable,
    FileDiff,
    ModeChanged,
    Plan,
    PlanEntry,
    TextDelta,
    ThinkingDelta,
    TitleChanged,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallUpdated,
    Usage,
    UserMessage,
)
from avatar.core.surrogates import escape_surrogates

if TYPE_CHECKING:
    from acp.schema import Cost
    from acp.schema import PlanEntry as AcpPlanEntry
    from acp.schema import Usage as AcpUsage

SessionUpdate = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | AgentPlanContentUpdate
    | AgentPlanRemovedUpdate
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate
)
"""Every update of `session/update` (`SessionNotification.update`), as the SDK parses it."""

ContentBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)

TerminalReader = Callable[[str], str | None]
"""Returns the current output of a client terminal by id (tool content may reference one)."""

_DONE = {"completed", "failed"}


def block_text(block: ContentBlock) -> str:
    """The text of one content block: text as is, resources and media as a short mention."""
    match block:
        case TextContentBlock(text=text):
            return text
        case ResourceContentBlock(name=name, uri=uri):
            return f"[{name or uri}]"
        case EmbeddedResourceContentBlock(resource=TextResourceContents(text=text)):
            return text
        case EmbeddedResourceContentBlock(resource=resource):
            return f"[{resource.uri or 'resource'}]"
        case ImageContentBlock():
            return "[image]"
        case AudioContentBlock():
            return "[audio]"
    return ""


def tool_output(
    update: ToolCallStart | ToolCallProgress, terminal: TerminalReader | None = None
) -> str | None:
    """The readable output of a tool call update: its content, else its raw output."""
    parts: list[str] = []
    for item in update.content or []:
        match item:
            case ContentToolCallContent(content=block):
                parts.append(block_text(block))
            case FileEditToolCallContent(path=path):
                parts.append(f"edited {path}")
            case TerminalToolCallContent(terminal_id=terminal_id) if terminal is not None:
                out = terminal(terminal_id)
                if out:
                    parts.append(out)
    if parts:
        return "\n".join(p for p in parts if p)
    raw = update.raw_output
    if raw is None:
        return None
    if isinstance(raw, str):
        return raw
    try:
        return json.dumps(raw, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(raw)


def tool_diffs(update: ToolCallStart | ToolCallProgress) -> list[FileDiff]:
    """The file changes an update reports (its `diff` content), each with the line of the file
    it starts at when the tool call's locations say (claude-agent-acp names one location per
    diff, in the same order, once the edit is made)."""
    edits = [c for c in update.content or [] if isinstance(c, FileEditToolCallContent)]
    locations = update.locations or []
    paired = len(locations) == len(edits)
    return [
        FileDiff(
            path=edit.path,
            old_text=edit.old_text,
            new_text=edit.new_text,
            line=at.line if paired and (at := locations[i]).path == edit.path else None,
        )
        for i, edit in enumerate(edits)
    ]


def _tool_name(update: ToolCallStart) -> str:
    # ACP has no tool name; the kind (read/edit/execute…) is the closest stable identifier.
    meta = update.field_meta or {}
    for key in ("toolName", "tool_name", "name"):
        if isinstance(meta.get(key), str):
            return str(meta[key])
    return str(update.kind or update.title or "tool")


def _plan(entries: list[AcpPlanEntry]) -> Plan:
    return Plan(
        entries=[
            PlanEntry(content=e.content, status=e.status, priority=e.priority) for e in entries
        ]
    )


def translate(update: SessionUpdate, terminal: TerminalReader | None = None) -> list[BaseEvent]:
    """The avatar events for one ACP session update (possibly none)."""
    match update:
        case AgentMessageChunk() | AgentThoughtChunk() | UserMessageChunk():
            return _chunk(update)
        case ToolCallStart():
            raw_input = update.raw_input
            events: list[BaseEvent] = [
                ToolCallStarted(
                    id=update.tool_call_id,
                    name=_tool_name(update),
                    title=update.title,
                    kind=update.kind,
                    input=raw_input if isinstance(raw_input, dict) else None,
                    diffs=tool_diffs(update),
                )
            ]
            # Replayed history (and quick tools) announce a call that has already finished.
            if update.status in _DONE:
                events.append(_finished(update, terminal))
            return events
        case ToolCallProgress():
            if update.status in _DONE:
                return [_finished(update, terminal)]
            output = tool_output(update, terminal)
            return [
                ToolCallUpdated(
                    id=update.tool_call_id,
                    status=update.status,
                    title=update.title,
                    output=output,
                    diffs=tool_diffs(update),
                )
            ]
        case (
            AgentPlanUpdate(entries=entries)
            | AgentPlanContentUpdate(plan=PlanUpdateItems(entries=entries))
        ):
            return [_plan(entries)]
        case AgentPlanContentUpdate(plan=PlanUpdateMarkdown(content=content)):
            return [Plan(entries=[PlanEntry(content=content)])]
        case AgentPlanRemovedUpdate():
            return [Plan(entries=[])]
        case AvailableCommandsUpdate(available_commands=commands):
            return [CommandsAvailable(commands=[c.name for c in commands])]
        case CurrentModeUpdate(current_mode_id=mode):
            return [ModeChanged(mode=mode)]
        case SessionInfoUpdate(title=str(title)) if title:
            return [TitleChanged(title=title)]
        case UsageUpdate(used=used, size=size, cost=cost):
            return [Usage(context_used=used, context_size=size, cost_usd=_usd(cost))]
    return []


def _chunk(update: AgentMessageChunk | AgentThoughtChunk | UserMessageChunk) -> list[BaseEvent]:
    text = escape_surrogates(block_text(update.content))  # see avatar.core.surrogates
    if not text:
        return []
    if isinstance(update, AgentMessageChunk):
        return [TextDelta(text=text)]
    if isinstance(update, AgentThoughtChunk):
        return [ThinkingDelta(text=text)]
    return [UserMessage(text=text)]


def _usd(cost: Cost | None) -> float | None:
    # The event carries dollars; a cost in another currency is not converted, just left out.
    if cost is None or cost.currency.upper() != "USD":
        return None
    return float(cost.amount)


def _finished(
    update: ToolCallStart | ToolCallProgress, terminal: TerminalReader | None
) -> ToolCallFinished:
    return ToolCallFinished(
        id=update.tool_call_id,
        output=tool_output(update, terminal) or "",
        is_error=update.status == "failed",
        diffs=tool_diffs(update),
    )


def prompt_usage(usage: AcpUsage | None) -> Usage | None:
    """The `Usage` event for a `PromptResponse.usage` (token counts of the turn), if any."""
    if usage is None:
        return None
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cached_read_tokens,
        cache_write_tokens=usage.cached_write_tokens,
    )
