"""ACP `session/update` payloads and `session/prompt` answers, as the agent wrote their JSON,
into avatar's event model.

One case per kind of update (`sessionUpdate`); kinds avatar shows nothing for (config option
updates, a plan kept in a file) translate to nothing, and so does anything that is not an
update at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, cast, get_args

from avatar.bridges.acp.jsonrpc import WrongAnswer
from avatar.core.events import (
    BaseEvent,
    CommandsAvailable,
    FileDiff,
    ModeChanged,
    Plan,
    PlanEntry,
    StopReason,
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

Json = Mapping[str, Any]
TerminalReader = Callable[[str], str | None]
"""Returns the current output of a client terminal by id (tool content may reference one)."""

_DONE = {"completed", "failed"}
#: How Gemini reports its approval mode's change: as a message chunk of its own, not as a
#: `current_mode_update` (it is not the model's answer).
_MODE_SAID = re.compile(r"\[MODE_UPDATE\] ([\w-]+)")

_CHUNKS: dict[str, type[TextDelta] | type[ThinkingDelta] | type[UserMessage]] = {
    "agent_message_chunk": TextDelta,
    "agent_thought_chunk": ThinkingDelta,
    "user_message_chunk": UserMessage,
}


def _dict(value: Any) -> Json:
    return value if isinstance(value, Mapping) else {}


def block_text(block: Json) -> str:
    """The text of one content block: text as is, resources and media as a short mention."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text") or "")
    if kind == "resource_link":
        return f"[{block.get('name') or block.get('uri')}]"
    if kind == "resource":
        resource = _dict(block.get("resource"))
        if isinstance(resource.get("text"), str):
            return str(resource["text"])
        return f"[{resource.get('uri') or 'resource'}]"
    if kind in ("image", "audio"):
        return f"[{kind}]"
    return ""


def tool_output(update: Json, terminal: TerminalReader | None = None) -> str | None:
    """The readable output of a tool call update: its content, else its raw output."""
    parts: list[str] = []
    for item in update.get("content") or []:
        item = _dict(item)
        kind = item.get("type")
        if kind == "content":
            parts.append(block_text(_dict(item.get("content"))))
        elif kind == "diff":
            parts.append(f"edited {item.get('path')}")
        elif kind == "terminal" and terminal is not None:
            out = terminal(str(item.get("terminalId")))
            if out:
                parts.append(out)
    if parts:
        return "\n".join(p for p in parts if p)
    raw = update.get("rawOutput")
    if raw is None:
        return None
    if isinstance(raw, str):
        return raw
    try:
        return json.dumps(raw, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(raw)


def tool_diffs(update: Json) -> list[FileDiff]:
    """The file changes an update reports (its `diff` content), each with the line of the file
    it starts at when the tool call's locations say (claude-agent-acp names one location per
    diff, in the same order, once the edit is made)."""
    edits = [c for c in map(_dict, update.get("content") or []) if c.get("type") == "diff"]
    locations = [_dict(loc) for loc in update.get("locations") or []]
    paired = len(locations) == len(edits)
    diffs = []
    for i, edit in enumerate(edits):
        at = locations[i] if paired else {}
        line = at.get("line") if at.get("path") == edit.get("path") else None
        old = edit.get("oldText")
        diffs.append(
            FileDiff(
                path=str(edit.get("path")),
                old_text=old if isinstance(old, str) else None,
                new_text=str(edit.get("newText") or ""),
                line=line if isinstance(line, int) else None,
            )
        )
    return diffs


def _tool_name(update: Json) -> str:
    # ACP has no tool name; the kind (read/edit/execute…) is the closest stable identifier.
    meta = _dict(update.get("_meta"))
    for key in ("toolName", "tool_name", "name"):
        if isinstance(meta.get(key), str):
            return str(meta[key])
    return str(update.get("kind") or update.get("title") or "tool")


def _plan(entries: Any) -> Plan:
    return Plan(
        entries=[
            PlanEntry(
                content=str(e.get("content", "")),
                status=str(e.get("status", "pending")),
                priority=e.get("priority"),
            )
            for e in map(_dict, entries or [])
        ]
    )


def translate(update: Json, terminal: TerminalReader | None = None) -> list[BaseEvent]:
    """The avatar events for one ACP session update, as JSON (possibly none)."""
    kind = update.get("sessionUpdate")
    if kind in _CHUNKS:
        text = escape_surrogates(block_text(_dict(update.get("content"))))
        said = _MODE_SAID.fullmatch(text) if kind == "agent_message_chunk" else None
        if said is not None:
            return [ModeChanged(mode=said.group(1))]
        return [_CHUNKS[kind](text=text)] if text else []
    if kind == "tool_call":
        raw_input = update.get("rawInput")
        events: list[BaseEvent] = [
            ToolCallStarted(
                id=str(update.get("toolCallId")),
                name=_tool_name(update),
                title=update.get("title"),
                kind=update.get("kind"),
                input=raw_input if isinstance(raw_input, dict) else None,
                diffs=tool_diffs(update),
            )
        ]
        # Replayed history (and quick tools) announce a call that has already finished.
        if update.get("status") in _DONE:
            events.append(_finished(update, terminal))
        return events
    if kind == "tool_call_update":
        if update.get("status") in _DONE:
            return [_finished(update, terminal)]
        return [
            ToolCallUpdated(
                id=str(update.get("toolCallId")),
                status=update.get("status"),
                title=update.get("title"),
                output=tool_output(update, terminal),
                diffs=tool_diffs(update),
            )
        ]
    if kind == "plan":
        return [_plan(update.get("entries"))]
    if kind == "plan_update":  # a plan as entries, or as markdown
        plan = _dict(update.get("plan"))
        if "entries" in plan:
            return [_plan(plan["entries"])]
        return [Plan(entries=[PlanEntry(content=str(plan.get("content", "")))])]
    if kind == "plan_removed":
        return [Plan(entries=[])]
    if kind == "available_commands_update":
        commands = [str(_dict(c).get("name")) for c in update.get("availableCommands") or []]
        return [CommandsAvailable(commands=commands)]
    if kind == "current_mode_update":
        return [ModeChanged(mode=str(update.get("currentModeId")))]
    if kind == "session_info_update":
        title = update.get("title")
        return [TitleChanged(title=title)] if isinstance(title, str) and title else []
    if kind == "usage_update":
        used, size = update.get("used"), update.get("size")
        return [Usage(context_used=used, context_size=size, cost_usd=_usd(update.get("cost")))]
    return []


def _usd(cost: Any) -> float | None:
    # The event carries dollars; a cost in another currency is not converted, just left out.
    cost = _dict(cost)
    if str(cost.get("currency", "")).upper() != "USD":
        return None
    return float(cost["amount"])


def _finished(update: Json, terminal: TerminalReader | None) -> ToolCallFinished:
    return ToolCallFinished(
        id=str(update.get("toolCallId")),
        output=tool_output(update, terminal) or "",
        is_error=update.get("status") == "failed",
        diffs=tool_diffs(update),
    )


def prompt_answer(answer: Json) -> tuple[StopReason, Usage | None]:
    """A `session/prompt` answer: why the turn stopped (`end_turn` when it does not say; a
    `WrongAnswer` for a reason the protocol does not know) and its token counts."""
    stop = answer.get("stopReason") or "end_turn"
    if stop not in get_args(StopReason):
        raise WrongAnswer(f"session/prompt answered stopReason {stop!r}")
    return cast("StopReason", stop), prompt_usage(answer.get("usage"), answer.get("_meta"))


def prompt_usage(usage: Any, meta: Any = None) -> Usage | None:
    """The `Usage` event for a `session/prompt` answer's `usage` (the turn's token counts),
    else for the counts Gemini puts in its `_meta.quota.token_count` instead."""
    if not isinstance(usage, Mapping):
        counts = _dict(_dict(_dict(meta).get("quota")).get("token_count"))
        if not any(isinstance(counts.get(k), int) for k in ("input_tokens", "output_tokens")):
            return None
        return Usage(
            input_tokens=counts.get("input_tokens"), output_tokens=counts.get("output_tokens")
        )
    return Usage(
        input_tokens=usage.get("inputTokens"),
        output_tokens=usage.get("outputTokens"),
        cache_read_tokens=usage.get("cachedReadTokens"),
        cache_write_tokens=usage.get("cachedWriteTokens"),
    )
