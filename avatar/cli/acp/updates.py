"""avatar's events as ACP `session/update`s, the other way round from what its ACP client reads
(`avatar.bridges.acp.wire`): what any agent avatar runs streams reaches the editor as if avatar
were that agent.

Text and thinking are message and thought chunks; a tool call is a `tool_call` with its kind,
its input and its changes as ACP `diff` content (each with its location), then
`tool_call_update`s with its output and status (an agent that reports no diff of its own,
as the native agent and Claude Code, has its changes read from the call's input); a plan is
a `plan`; a title a `session_info_update`; the context's fill and the session's cost a
`usage_update` (only when both figures of the context are known: ACP requires them). A turn's
token counts go in the prompt's answer (`Tokens`). A session's history, reopened, is replayed
from its transcript (`replay`), the same for every provider. Events with nothing to show an
editor (a session opened, a notice, a permission already decided) make no update: notices go
to stderr.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from avatar.core.diffs import changes_of
from avatar.core.events import (
    FileDiff,
    Plan,
    TextDelta,
    ThinkingDelta,
    TitleChanged,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallUpdated,
    Usage,
    UserMessage,
)

if TYPE_CHECKING:
    from avatar.core.events import BaseEvent
    from avatar.sessions.types import TranscriptMessage

#: The tool kinds ACP knows; any other is `other`.
KINDS = frozenset(
    {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode"}
)
#: The tool call statuses ACP knows.
STATUSES = frozenset({"pending", "in_progress", "completed", "failed"})
#: Plan entries' priorities and statuses as ACP has them.
PRIORITIES = frozenset({"high", "medium", "low"})
PLAN_STATUSES = frozenset({"pending", "in_progress", "completed"})


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def message(text: str) -> dict[str, Any]:
    """An agent message chunk of `text` (an answer of avatar's own: a command's, notices)."""
    return {"sessionUpdate": "agent_message_chunk", "content": _text(text)}


def _path(path: str, cwd: str) -> str:
    """ACP's paths are absolute: one the agent gave relative is the session's."""
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(cwd, path))


def _diffs(diffs: list[FileDiff], cwd: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The `diff` content and the locations of a tool call's changes."""
    content, where = [], []
    for d in diffs:
        path = _path(d.path, cwd)
        content.append({"type": "diff", "path": path, "oldText": d.old_text, "newText": d.new_text})
        where.append({"path": path} | ({"line": d.line} if d.line is not None else {}))
    return content, where


def _tool_update(
    call_id: str, status: str | None, output: str | None, diffs: list[FileDiff], cwd: str
) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": call_id}
    if status in STATUSES:
        update["status"] = status
    content, where = _diffs(diffs, cwd)
    if output:
        content.insert(0, {"type": "content", "content": _text(output)})
    if content:
        update["content"] = content
    if where:
        update["locations"] = where
    return update


def update_for(event: BaseEvent, cwd: str) -> dict[str, Any] | None:
    """The `session/update` payload (its `update`) for one event of a turn; None for an
    event with nothing to show (see the module docstring)."""
    if isinstance(event, TextDelta | ThinkingDelta | UserMessage):
        kind = {
            TextDelta: "agent_message_chunk",
            ThinkingDelta: "agent_thought_chunk",
            UserMessage: "user_message_chunk",
        }[type(event)]
        return {"sessionUpdate": kind, "content": _text(event.text)} if event.text else None
    if isinstance(event, ToolCallStarted):
        content, where = _diffs(event.diffs or _asked(event), cwd)
        update: dict[str, Any] = {
            "sessionUpdate": "tool_call",
            "toolCallId": event.id,
            "title": event.title or event.name,
            "kind": event.kind if event.kind in KINDS else "other",
            "status": "pending",
        }
        if event.input is not None:
            update["rawInput"] = event.input
        if content:
            update["content"] = content
        if where:
            update["locations"] = where
        return update
    if isinstance(event, ToolCallUpdated):
        update = _tool_update(event.id, event.status, event.output, event.diffs, cwd)
        return update | ({"title": event.title} if event.title else {})
    if isinstance(event, ToolCallFinished):
        status = "failed" if event.is_error else "completed"
        return _tool_update(event.id, status, event.output, event.diffs, cwd)
    if isinstance(event, Plan):
        return {"sessionUpdate": "plan", "entries": [_entry(e) for e in event.entries]}
    if isinstance(event, TitleChanged):
        return {"sessionUpdate": "session_info_update", "title": event.title}
    if isinstance(event, Usage) and event.context_used is not None and event.context_size:
        usage: dict[str, Any] = {
            "sessionUpdate": "usage_update",
            "used": event.context_used,
            "size": event.context_size,
        }
        if event.cost_usd is not None:
            usage["cost"] = {"amount": event.cost_usd, "currency": "USD"}
        return usage
    return None


def _asked(call: ToolCallStarted) -> list[FileDiff]:
    """The changes a write or edit call asks for, read from its input where the agent reports
    none (the native agent, Claude Code: `avatar.core.diffs.changes_of`). A whole file written
    has no old text here: the file is not read (avatar runs outside the walls, and the path is
    the agent's), so the client shows it as written anew."""
    return [FileDiff(c.path, c.old or None, c.new) for c in changes_of(call)]


def _entry(entry: Any) -> dict[str, Any]:
    priority = entry.priority if entry.priority in PRIORITIES else "medium"
    status = entry.status if entry.status in PLAN_STATUSES else "pending"
    return {"content": entry.content, "priority": priority, "status": status}


class Tokens:
    """A turn's token counts, as its `Usage` events report them, for the prompt's answer."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def observe(self, event: BaseEvent) -> None:
        """Keep the counts a `Usage` event reports (a later one replaces an earlier)."""
        if not isinstance(event, Usage):
            return
        fields = {
            "inputTokens": event.input_tokens,
            "outputTokens": event.output_tokens,
            "cachedReadTokens": event.cache_read_tokens,
            "cachedWriteTokens": event.cache_write_tokens,
        }
        self.counts |= {k: v for k, v in fields.items() if v is not None}

    def usage(self) -> dict[str, int] | None:
        """The prompt answer's `usage`, or None when the agent reported no tokens."""
        if "inputTokens" not in self.counts and "outputTokens" not in self.counts:
            return None
        counts = {"inputTokens": 0, "outputTokens": 0} | self.counts
        return counts | {"totalTokens": sum(counts.values())}


def replay(messages: list[TranscriptMessage], mask: Any) -> list[dict[str, Any]]:
    """The updates that replay a session's history: each user message, each answer, each tool
    call (finished) as it was, secrets masked (`mask`: the engine's detector's `mask`)."""
    updates: list[dict[str, Any]] = []
    for n, said in enumerate(messages):
        text = mask(said.text) if said.text else ""
        if said.role == "user" and text:
            updates.append({"sessionUpdate": "user_message_chunk", "content": _text(text)})
        elif said.role == "assistant":
            if text:
                updates.append(message(text))
            for i, call in enumerate(said.tool_calls):
                updates.append(
                    {
                        "sessionUpdate": "tool_call",
                        "toolCallId": call.id or f"replay-{n}-{i}",
                        "title": mask(call.name),
                        "kind": "other",
                        "status": "completed",
                    }
                )
    return updates
