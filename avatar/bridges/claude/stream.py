"""Claude Code's stream-json protocol: its output as events (the command line that starts it:
`avatar.bridges.claude.argv`).

`claude -p --input-format stream-json --output-format stream-json --verbose` reads one JSON
message per line on stdin (user turns and `control_request`s) and writes one per line on stdout.
Per turn it writes `system/init` (session id, model, tools), `stream_event`s wrapping the
Anthropic streaming events (with `--include-partial-messages`), one `assistant` message per
content block, `user` messages carrying tool results, and a final `result` with usage and cost.
It asks for permissions with `control_request` `can_use_tool` (with
`--permission-prompt-tool stdio`). Pure functions and a small state machine: no I/O here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.core.events import (
    BaseEvent,
    CommandsAvailable,
    Error,
    Notice,
    StopReason,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    Usage,
)

if TYPE_CHECKING:
    from avatar.core.prompts import Prompt

# Claude Code tool name → the ACP-style kind the UI groups tools by.
TOOL_KINDS = {
    "Read": "read",
    "Write": "edit",
    "Edit": "edit",
    "MultiEdit": "edit",
    "NotebookEdit": "edit",
    "Bash": "execute",
    "BashOutput": "execute",
    "KillShell": "execute",
    "Grep": "search",
    "Glob": "search",
    "LS": "search",
    "WebFetch": "fetch",
    "WebSearch": "fetch",
    "Task": "think",
    "Agent": "think",
    "TodoWrite": "think",
}

SYNTHETIC = "<synthetic>"

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "end_turn",
    "pause_turn": "end_turn",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
}


def user_message(prompt: Prompt) -> dict[str, Any]:
    """One user turn as a stream-json input line: its text, then its images (base64)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": prompt.text}]
    content += [
        {"type": "image", "source": {"type": "base64", "media_type": i.mime, "data": i.base64}}
        for i in prompt.images
    ]
    return {
        "type": "user",
        "message": {"role": "user", "content": content},
        "parent_tool_use_id": None,
    }


def control_request(request_id: str, subtype: str, **fields: Any) -> dict[str, Any]:
    """A control request to the CLI (`interrupt`, `set_model`, …)."""
    return {
        "type": "control_request",
        "request_id": request_id,
        "request": {"subtype": subtype, **fields},
    }


def control_response(request_id: str, response: dict[str, Any] | None = None) -> dict[str, Any]:
    """A successful answer to one of the CLI's control requests."""
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response or {}},
    }


def control_error(request_id: str, message: str) -> dict[str, Any]:
    """A failed answer to one of the CLI's control requests."""
    return {
        "type": "control_response",
        "response": {"subtype": "error", "request_id": request_id, "error": message},
    }


DENIED = "denied by avatar's permission policy"


def permission_answer(allowed: bool, tool_input: Any, reason: str | None = None) -> dict[str, Any]:
    """The `can_use_tool` verdict: allow with the input unchanged, or deny with a reason
    (the model reads it as the tool's result)."""
    if allowed:
        updated = tool_input if isinstance(tool_input, dict) else {}
        return {"behavior": "allow", "updatedInput": updated}
    return {"behavior": "deny", "message": reason or DENIED}


_TITLE_KEYS = ("description", "command", "file_path", "notebook_path", "path", "pattern", "url")
_PATH_KEYS = frozenset({"file_path", "notebook_path", "path"})


def tool_title(name: str, tool_input: Any, cwd: Path | None = None) -> str:
    """A short human title for a tool call: the command, the file (relative to `cwd`, the
    project, when it is in it: Claude Code names files by their absolute path), or the tool
    name."""
    if isinstance(tool_input, dict):
        for key in _TITLE_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str) and value.strip():
                line = value.strip().splitlines()[0]
                if key in _PATH_KEYS and cwd is not None:
                    line = _relative(line, cwd)
                return f"{name}: {line[:120]}"
    return name


def _relative(path: str, cwd: Path) -> str:
    """`path` relative to `cwd` when it lies in it (as given, or with links resolved)."""
    given = Path(path)
    if not given.is_absolute():
        return path
    for root in dict.fromkeys((cwd, Path(os.path.realpath(cwd)))):
        if given.is_relative_to(root):
            return str(given.relative_to(root)) or "."
    return path


def result_text(content: Any) -> str:
    """The text of a tool result's content (a string or a list of content blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text") or ""))
                elif block.get("type") == "image":
                    parts.append("[image]")
        return "\n".join(parts)
    return ""


class StreamTranslator:
    """Turns stdout messages into avatar events; one instance per process, reset per turn."""

    def __init__(self, cwd: Path | None = None) -> None:
        self.cwd = cwd  # the project: tool titles name its files relative to it
        self.session_id: str | None = None
        self.model: str | None = None
        self.commands_sent = False
        self.cost_usd: float | None = None  # the session's, as claude's `total_cost_usd` adds up
        #: What the session cost in earlier processes: `total_cost_usd` counts from the
        #: process's start, and a restarted claude (after a crash) starts again from 0.
        self.cost_before = 0.0
        self.context_size: int | None = None
        self.begin_turn()

    def begin_turn(self) -> None:
        """Forget per-turn state before a new user message."""
        self.cancelled = False
        self._streamed: set[str] = set()  # message ids whose text/thinking came as deltas
        self._message_id: str | None = None
        self._context_used: int | None = None
        self._started: set[str] = set()  # tool_use ids already reported

    def feed(self, msg: Mapping[str, Any]) -> list[BaseEvent]:
        """Events for one stdout message (control messages are the bridge's business)."""
        kind = msg.get("type")
        if msg.get("parent_tool_use_id"):
            return []  # a sub-agent's inner conversation: its tool call reports the outcome
        if kind == "system":
            return self._system(msg)
        if kind == "stream_event":
            return self._stream_event(msg.get("event") or {})
        if kind == "assistant":
            return self._assistant(msg.get("message") or {})
        if kind == "user":
            return self._user(msg.get("message") or {})
        if kind == "result":
            return self._result(msg)
        return []

    def _system(self, msg: Mapping[str, Any]) -> list[BaseEvent]:
        subtype = msg.get("subtype")
        if subtype == "init":
            self.session_id = msg.get("session_id") or self.session_id
            self.model = msg.get("model") or self.model
            commands = msg.get("slash_commands")
            if not self.commands_sent and isinstance(commands, list):
                self.commands_sent = True
                return [CommandsAvailable(commands=[str(c) for c in commands])]
        elif subtype == "api_retry":
            attempt, most = msg.get("attempt"), msg.get("max_retries")
            why = msg.get("error_status") or msg.get("error") or "error"
            return [
                Notice(
                    message=f"model API request failed ({why}); retrying ({attempt}/{most})",
                    level="warning",
                )
            ]
        elif subtype == "compact_boundary":
            return self._compacted(msg.get("compact_metadata") or {})
        return []

    def _compacted(self, meta: Mapping[str, Any]) -> list[BaseEvent]:
        """Claude compacted the conversation: say so, with its counts, and the context is what
        it kept (`post_tokens`) from now on, not the size the last model call reported."""
        before, after = _count(meta.get("pre_tokens")), _count(meta.get("post_tokens"))
        if before is None or after is None:
            return [Notice(message="claude compacted the conversation")]
        self._context_used = after
        return [
            Notice(message=f"claude compacted the conversation: {before:,} → {after:,} tokens"),
            Usage(context_used=after, context_size=self.context_size),
        ]

    def _stream_event(self, event: Mapping[str, Any]) -> list[BaseEvent]:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self._message_id = message.get("id")
            usage = message.get("usage") or {}
            self._context_used = sum(
                _count(usage.get(k)) or 0
                for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
            )
        elif kind == "message_delta":
            out = (event.get("usage") or {}).get("output_tokens")
            if self._context_used is not None and isinstance(out, int):
                self._context_used += out
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            dtype = delta.get("type")
            if self._message_id:
                self._streamed.add(self._message_id)
            if dtype == "text_delta" and (text := _text(delta.get("text"))):
                return [TextDelta(text=text)]
            if dtype == "thinking_delta" and (text := _text(delta.get("thinking"))):
                return [ThinkingDelta(text=text)]
        return []

    def _assistant(self, message: Mapping[str, Any]) -> list[BaseEvent]:
        # "<synthetic>" messages are made by Claude Code itself (API errors, interruptions);
        # their text repeats what the `result` reports as an error.
        streamed = message.get("id") in self._streamed or message.get("model") == SYNTHETIC
        out: list[BaseEvent] = []
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text" and not streamed and (text := _text(block.get("text"))):
                # Not streamed: an older CLI, or a message Claude Code made itself (API errors).
                out.append(TextDelta(text=text))
            elif btype == "thinking" and not streamed and (text := _text(block.get("thinking"))):
                out.append(ThinkingDelta(text=text))
            elif btype == "tool_use" and block.get("id") not in self._started:
                name = str(block.get("name") or "tool")
                tool_input = block.get("input")
                self._started.add(str(block.get("id")))
                out.append(
                    ToolCallStarted(
                        id=str(block.get("id")),
                        name=name,
                        title=tool_title(name, tool_input, self.cwd),
                        kind=TOOL_KINDS.get(name, "other"),
                        input=tool_input if isinstance(tool_input, dict) else None,
                    )
                )
        return out

    def _user(self, message: Mapping[str, Any]) -> list[BaseEvent]:
        content = message.get("content")
        out: list[BaseEvent] = []
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                out.append(
                    ToolCallFinished(
                        id=str(block.get("tool_use_id")),
                        output=result_text(block.get("content")),
                        is_error=bool(block.get("is_error")),
                    )
                )
        return out

    def _result(self, msg: Mapping[str, Any]) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        self.session_id = msg.get("session_id") or self.session_id
        usage = msg.get("usage") or {}
        for info in (msg.get("modelUsage") or {}).values():
            if isinstance(info, dict) and _count(info.get("contextWindow")):
                self.context_size = info["contextWindow"]
        if isinstance(msg.get("total_cost_usd"), (int, float)):
            self.cost_usd = self.cost_before + float(msg["total_cost_usd"])
        if any(usage.get(k) for k in ("input_tokens", "output_tokens")):
            # An interrupted turn reports all zeros: nothing worth showing.
            out.append(
                Usage(
                    input_tokens=_count(usage.get("input_tokens")),
                    output_tokens=_count(usage.get("output_tokens")),
                    cache_read_tokens=_count(usage.get("cache_read_input_tokens")),
                    cache_write_tokens=_count(usage.get("cache_creation_input_tokens")),
                    cost_usd=self.cost_usd,
                    context_used=self._context_used,
                    context_size=self.context_size,
                )
            )
        subtype = msg.get("subtype")
        if self.cancelled:
            out.append(TurnFinished(stop_reason="cancelled"))
        elif subtype == "error_max_turns":
            out.append(TurnFinished(stop_reason="max_turn_requests"))
        elif msg.get("is_error") or subtype != "success":
            out.append(Error(message=f"claude: {result_error(msg)}"))
            out.append(TurnFinished(stop_reason="error"))
        else:
            reason = _STOP_REASONS.get(str(msg.get("stop_reason")), "end_turn")
            out.append(TurnFinished(stop_reason=reason))
        return out


def _text(value: Any) -> str | None:
    """A text field of claude's output, when it is one (events carry only checked values)."""
    return value if isinstance(value, str) else None


def _count(value: Any) -> int | None:
    """A token count of claude's output, when it is one."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def result_error(msg: Mapping[str, Any]) -> str:
    """What went wrong, from a failed `result` message."""
    errors = msg.get("errors")
    if isinstance(errors, list):
        real = [str(e) for e in errors if e and not str(e).startswith("[ede_diagnostic]")]
        if real:
            return "; ".join(real)
    text = msg.get("result")
    if isinstance(text, str) and text.strip():
        return text.strip()
    return str(msg.get("subtype") or "the turn failed")
