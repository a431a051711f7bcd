"""One codex rollout read line by line (`avatar.sessions.codex` is the store of them).

Each line is `{"timestamp", "type", "payload"}`; the first is `session_meta` (id, cwd, start
time, and for a fork of codex 0.166 its `history_base`), `turn_context` lines carry the model,
and the conversation is in `response_item` lines (`message`, `function_call`,
`function_call_output`, …). `event_msg` lines repeat the conversation for UIs and are ignored.
"""

from __future__ import annotations

import io
import json
import re
from datetime import datetime
from typing import Any

from avatar.core.ids import UUID_RE
from avatar.sessions.filestore import FileFold
from avatar.sessions.jsonl import (
    LIST_LINE_CAP,
    TRANSCRIPT_LINE_CAP,
    LineStats,
    blocks_text,
    is_injected,
    iter_records,
    later,
    parse_line,
    parse_time,
)
from avatar.sessions.types import ToolCall, TranscriptMessage

# User-role messages codex builds itself: environment, instructions, aborted-turn markers.
INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "# AGENTS.md instructions for",
    "<INSTRUCTIONS>",
    "<skills_instructions>",
    "<apps_instructions>",
    "<plugins_instructions>",
    "<collaboration_mode>",
    "<personality_spec>",
    "<startup_context>",
    "<subagent_notification>",
    "<turn_aborted>",
    "<user_shell_command>",
)

LIST_WANT = re.compile(rb'"type"\s*:\s*"(?:session_meta|turn_context|message)"')
_META = re.compile(rb'"type"\s*:\s*"session_meta"')
_INSTRUCTIONS = re.compile(rb',\s*"base_instructions"\s*:')
_HISTORY_BASE = re.compile(rb'"history_base"\s*:')
_TOOL_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_TOOL_OUTPUTS = ("function_call_output", "custom_tool_call_output")


class RolloutFold(FileFold):
    """Walks a rollout's lines once, for a listing summary or a full transcript."""

    def __init__(self, keep: bool) -> None:
        super().__init__(keep)
        self.session_id: Any = None
        self.meta_seen = False
        self.subagent = False
        #: A fork's history: (its parent's id, the byte offset in the parent's rollout).
        self.base: tuple[str, int] | None = None
        self._assistant: TranscriptMessage | None = None

    def feed(self, line: dict[str, Any]) -> None:
        kind = line.get("type")
        payload = line.get("payload")
        if not isinstance(payload, dict):
            return
        stamp = parse_time(line.get("timestamp"))
        self.updated = later(self.updated, stamp)
        if kind == "session_meta":
            if not self.meta_seen:  # a resumed or forked rollout may repeat its parent's meta
                self.meta_seen = True
                self.session_id = payload.get("id") or payload.get("session_id")
                source = payload.get("source")
                # Threads codex spawns itself (reviews, sub-agents) are not user sessions.
                self.subagent = isinstance(source, dict) and "subagent" in source
                cwd = payload.get("cwd")
                self.cwd = cwd if isinstance(cwd, str) else None
                self.created = parse_time(payload.get("timestamp")) or stamp
                self.base = history_base(payload.get("history_base"))
        elif kind == "turn_context":
            model = payload.get("model")
            if isinstance(model, str) and model:
                self.model = model
        elif kind == "response_item":
            self._item(payload, stamp)

    def _item(self, item: dict[str, Any], stamp: datetime | None) -> None:
        kind = item.get("type")
        if kind == "message":
            role = item.get("role")
            text = blocks_text(item.get("content"), kinds=("input_text", "output_text", "text"))
            if role == "user":
                self._assistant = None
                if is_injected(text, INJECTED_PREFIXES):
                    return
                self.count += 1
                self.first_user = self.first_user or text
                if self.keep:
                    self.messages.append(TranscriptMessage(role="user", text=text, timestamp=stamp))
            elif role == "assistant":
                self.count += 1
                if self.keep:
                    message = TranscriptMessage(role="assistant", text=text, timestamp=stamp)
                    self._assistant = message
                    self.messages.append(message)
        elif not self.keep:
            return
        elif kind in _TOOL_CALLS:
            call = ToolCall(id=item.get("call_id"), name=_tool_name(item), input=_tool_input(item))
            if self._assistant is None:
                self._assistant = TranscriptMessage(role="assistant", timestamp=stamp)
                self.messages.append(self._assistant)
            self._assistant.tool_calls.append(call)
        elif kind in _TOOL_OUTPUTS:
            text, failed = _tool_output(item.get("output"))
            self.messages.append(
                TranscriptMessage(
                    role="tool",
                    text=text,
                    tool_call_id=item.get("call_id"),
                    is_error=failed,
                    timestamp=stamp,
                )
            )
            self._assistant = None


def history_base(value: Any) -> tuple[str, int] | None:
    """`history_base` of a fork's `session_meta`: (parent id, end byte offset)."""
    if not isinstance(value, dict):
        return None
    parent, end = value.get("thread_id"), value.get("end_byte_offset")
    if isinstance(parent, str) and UUID_RE.fullmatch(parent) and type(end) is int and end > 0:
        return parent, end
    return None


def parse_for_listing(line: bytes) -> dict[str, Any] | None:
    """Parse a line, but decode `session_meta` only up to its (long) base instructions.

    The id, start time and cwd come first in the payload and the 15-40 KB of instructions
    after them are never listed; raw `,"base_instructions":` cannot occur inside a JSON
    string (its quotes would be escaped), so the cut always falls between two fields. A
    fork's meta is decoded whole: its `history_base` comes after the instructions.
    """
    if line.startswith(b"{") and _META.search(line) and not _HISTORY_BASE.search(line):
        cut = _INSTRUCTIONS.search(line)
        if cut is not None:
            head = parse_line(line[: cut.start()] + b"}}")
            if head is not None:
                return head
    return parse_line(line)


def _tool_name(item: dict[str, Any]) -> str:
    if item.get("type") == "local_shell_call":
        return "shell"
    return str(item.get("name") or "tool")


def _tool_input(item: dict[str, Any]) -> dict[str, Any] | str | None:
    raw = item.get("arguments", item.get("input", item.get("action")))
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return raw
        return parsed if isinstance(parsed, dict) else raw
    return raw if isinstance(raw, dict) else None


def _tool_output(output: Any) -> tuple[str, bool]:
    # Either a plain string or {"content": str | parts, "success": bool}.
    if isinstance(output, dict):
        text = blocks_text(output.get("content"), kinds=("input_text", "output_text", "text"))
        return text, output.get("success") is False
    if isinstance(output, str):
        return output, False
    return blocks_text(output, kinds=("input_text", "output_text", "text")), False


def fold_head(path: str, end: int, keep: bool) -> RolloutFold | None:
    """The first `end` bytes of rollout `path` read (a fork's inherited history ends there
    in its parent's rollout); None when it cannot be read."""
    fold = RolloutFold(keep)
    try:
        with open(path, "rb") as f:
            head = io.BytesIO(f.read(end))
    except OSError:
        return None
    want, parse = (None, None) if keep else (LIST_WANT, parse_for_listing)
    cap = TRANSCRIPT_LINE_CAP if keep else LIST_LINE_CAP
    for record in iter_records(head, LineStats(), max_line=cap, want=want, parse=parse):
        fold.feed(record)
    return fold
