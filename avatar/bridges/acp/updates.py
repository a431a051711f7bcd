"""Translate ACP `session/update` payloads into avatar's event model.

Works on the SDK's pydantic objects by attribute (keyed by `session_update`), so this module
itself never imports `acp`. Unknown update kinds translate to nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from avatar.core.events import (
    BaseEvent,
    CommandsAvailable,
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

TerminalReader = Callable[[str], str | None]
"""Returns the current output of a client terminal by id (tool content may reference one)."""

_DONE = {"completed", "failed"}


def block_text(block: Any) -> str:
    """The text of one content block: text as is, resources and media as a short mention."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind == "resource_link":
        return f"[{getattr(block, 'name', '') or getattr(block, 'uri', '')}]"
    if kind == "resource":
        resource = getattr(block, "resource", None)
        text = getattr(resource, "text", None)
        return str(text) if text is not None else f"[{getattr(resource, 'uri', 'resource')}]"
    if kind in ("image", "audio"):
        return f"[{kind}]"
    return ""


def tool_output(update: Any, terminal: TerminalReader | None = None) -> str | None:
    """The readable output of a tool call update: its content, else its raw output."""
    parts: list[str] = []
    for item in getattr(update, "content", None) or []:
        kind = getattr(item, "type", None)
        if kind == "content":
            parts.append(block_text(item.content))
        elif kind == "diff":
            parts.append(f"edited {item.path}")
        elif kind == "terminal" and terminal is not None:
            out = terminal(item.terminal_id)
            if out:
                parts.append(out)
    if parts:
        return "\n".join(p for p in parts if p)
    raw = getattr(update, "raw_output", None)
    if raw is None:
        return None
    if isinstance(raw, str):
        return raw
    try:
        return json.dumps(raw, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(raw)


def _tool_name(update: Any) -> str:
    # ACP has no tool name; the kind (read/edit/execute…) is the closest stable identifier.
    meta = getattr(update, "field_meta", None) or {}
    for key in ("toolName", "tool_name", "name"):
        if isinstance(meta.get(key), str):
            return str(meta[key])
    kind = getattr(update, "kind", None)
    return str(kind or getattr(update, "title", None) or "tool")


def _plan_entries(entries: Any) -> list[PlanEntry]:
    return [
        PlanEntry(
            content=str(e.content),
            status=str(getattr(e, "status", "pending") or "pending"),
            priority=getattr(e, "priority", None),
        )
        for e in entries or []
    ]


def translate(update: Any, terminal: TerminalReader | None = None) -> list[BaseEvent]:
    """The avatar events for one ACP session update (possibly none)."""
    kind = getattr(update, "session_update", None)
    if kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
        text = escape_surrogates(block_text(update.content))  # see avatar.core.surrogates
        if not text:
            return []
        if kind == "agent_message_chunk":
            return [TextDelta(text=text)]
        if kind == "agent_thought_chunk":
            return [ThinkingDelta(text=text)]
        return [UserMessage(text=text)]
    if kind == "tool_call":
        raw_input = getattr(update, "raw_input", None)
        events: list[BaseEvent] = [
            ToolCallStarted(
                id=update.tool_call_id,
                name=_tool_name(update),
                title=update.title,
                kind=getattr(update, "kind", None),
                input=raw_input if isinstance(raw_input, dict) else None,
            )
        ]
        # Replayed history (and quick tools) announce a call that has already finished.
        if getattr(update, "status", None) in _DONE:
            events.append(_finished(update, terminal))
        return events
    if kind == "tool_call_update":
        if getattr(update, "status", None) in _DONE:
            return [_finished(update, terminal)]
        return [
            ToolCallUpdated(
                id=update.tool_call_id,
                status=getattr(update, "status", None),
                title=getattr(update, "title", None),
                output=tool_output(update, terminal),
            )
        ]
    if kind == "plan":
        return [Plan(entries=_plan_entries(update.entries))]
    if kind == "plan_update":
        plan = update.plan
        if getattr(plan, "type", None) == "items":
            return [Plan(entries=_plan_entries(plan.entries))]
        if getattr(plan, "type", None) == "markdown":
            return [Plan(entries=[PlanEntry(content=str(plan.content))])]
        return []
    if kind == "plan_removed":
        return [Plan(entries=[])]
    if kind == "available_commands_update":
        return [CommandsAvailable(commands=[c.name for c in update.available_commands or []])]
    if kind == "current_mode_update":
        return [ModeChanged(mode=update.current_mode_id)]
    if kind == "session_info_update":
        title = getattr(update, "title", None)
        return [TitleChanged(title=title)] if title else []
    if kind == "usage_update":
        cost = getattr(update, "cost", None)
        return [
            Usage(
                context_used=update.used,
                context_size=update.size,
                cost_usd=_usd(cost),
            )
        ]
    return []


def _usd(cost: Any) -> float | None:
    # The event carries dollars; a cost in another currency is not converted, just left out.
    if cost is None or str(getattr(cost, "currency", "USD")).upper() != "USD":
        return None
    return float(cost.amount)


def _finished(update: Any, terminal: TerminalReader | None) -> ToolCallFinished:
    return ToolCallFinished(
        id=update.tool_call_id,
        output=tool_output(update, terminal) or "",
        is_error=getattr(update, "status", None) == "failed",
    )


def prompt_usage(usage: Any) -> Usage | None:
    """The `Usage` event for a `PromptResponse.usage` (token counts of the turn), if any."""
    if usage is None:
        return None
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=getattr(usage, "cached_read_tokens", None),
        cache_write_tokens=getattr(usage, "cached_write_tokens", None),
    )
