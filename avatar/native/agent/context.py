"""Rebuild a session's model context from its entries, one entry at a time.

Folding entries (instead of keeping them) keeps resume memory close to the size of the
conversation itself, and a `compaction` entry simply replaces everything before the first
kept message with the summary — so resuming after a compaction rebuilds the compacted
context, not the whole log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from avatar.native.llm.types import Message, ToolCall
from avatar.native.store.entries import (
    CompactionEntry,
    Entry,
    InterruptedEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionHeader,
    SteeringEntry,
    TitleEntry,
    ToolCallEntry,
    ToolResultEntry,
)
from avatar.policy.secrets import title_source

SUMMARY_PREFIX = "The earlier part of this conversation was compacted. Summary:\n\n"
INTERRUPTED_RESULT = "(no result: the tool call was interrupted)"


def summary_message(summary: str, entry_id: str | None) -> Message:
    """The user message that stands in for compacted history."""
    return Message(role="user", text=SUMMARY_PREFIX + summary, entry_id=entry_id)


@dataclass
class SessionState:
    """What a session's entries add up to: the context to send, and facts for the index."""

    header: SessionHeader
    messages: list[Message] = field(default_factory=list)
    model: str | None = None
    title: str | None = None
    first_user_text: str | None = None
    message_count: int = 0  # user and assistant messages in the whole log
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    # Context size as last reported by the provider, and how many context messages it covered.
    usage_tokens: int = 0
    usage_covers: int = 0
    last_entry_id: str | None = None
    updated: str | None = None
    compactions: int = 0
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.model is None:
            self.model = self.header.model
        if self.updated is None:
            self.updated = self.header.created

    @property
    def display_title(self) -> str | None:
        """The explicit title, else the first line of the first user message."""
        if self.title:
            return self.title
        return derive_title(self.first_user_text)

    def apply(self, entry: Entry) -> None:
        """Fold one entry into the state."""
        self.last_entry_id = entry.id
        self.updated = entry.timestamp
        # A dict lookup instead of an isinstance chain: this runs once per line on resume.
        _APPLY[type(entry)](self, entry)

    def _message(self, entry: MessageEntry) -> None:
        self.message_count += 1
        self.messages.append(Message(entry.role, entry.text, entry_id=entry.id))
        if entry.role == "user":
            self.interrupted = False
            if self.first_user_text is None:
                self.first_user_text = entry.text
            return
        if entry.model:
            self.model = entry.model
        usage = entry.usage
        if usage is not None:
            self.input_tokens += usage.input + usage.cache_read + usage.cache_write
            self.output_tokens += usage.output
            self.cost += usage.cost
            self.usage_tokens = usage.input + usage.cache_read + usage.cache_write + usage.output
            self.usage_covers = len(self.messages)

    def _tool_call(self, entry: ToolCallEntry) -> None:
        last = self.messages[-1] if self.messages else None
        if last is None or last.role != "assistant":
            last = Message("assistant", entry_id=entry.id)
            self.messages.append(last)
        call = ToolCall(entry.call_id, entry.name, entry.input)
        if last.tool_calls is None:
            last.tool_calls = [call]
        else:
            last.tool_calls.append(call)

    def _tool_result(self, entry: ToolResultEntry) -> None:
        self.messages.append(
            Message("tool", entry.output, None, entry.call_id, entry.name, entry.is_error, entry.id)
        )

    def _steering(self, entry: SteeringEntry) -> None:
        self.messages.append(Message("user", entry.text, entry_id=entry.id))
        self.message_count += 1

    def _model_change(self, entry: ModelChangeEntry) -> None:
        self.model = entry.model

    def _title(self, entry: TitleEntry) -> None:
        self.title = entry.title

    def _interrupted(self, entry: InterruptedEntry) -> None:
        self.interrupted = True

    def _compaction(self, entry: CompactionEntry) -> None:
        kept: list[Message] = []
        if entry.first_kept is not None:
            for i, message in enumerate(self.messages):
                if message.entry_id == entry.first_kept:
                    kept = self.messages[i:]
                    break
            else:
                self.warnings.append(
                    f"compaction {entry.id}: first kept entry {entry.first_kept} not found; "
                    "keeping the whole context"
                )
                kept = self.messages
        head = [summary_message(entry.summary, entry.id)] if entry.summary else []
        self.messages = head + kept
        self.compactions += 1
        # The provider's last count covered the old context; estimate afresh from here.
        self.usage_tokens = 0
        self.usage_covers = 0

    def estimated_tokens(self, system_chars: int = 0) -> int:
        """Context size: the provider's last count plus chars/4 for what came after it."""
        if self.usage_tokens:
            after = self.messages[self.usage_covers :]
            return self.usage_tokens + sum(m.chars() for m in after) // 4
        return self.chars_estimate(system_chars)

    def chars_estimate(self, system_chars: int = 0) -> int:
        """Context size estimated from its characters alone (chars/4), whatever was reported:
        two of these compare like with like."""
        return (system_chars + sum(m.chars() for m in self.messages)) // 4

    def context(self) -> list[Message]:
        """The messages to send, with tool calls and results paired up (see `repair`)."""
        return repair_tool_pairs(self.messages)


# Each method takes its own entry type; the table pairs them, which mypy cannot express.
_APPLY: dict[type[Entry], Callable[[SessionState, Any], None]] = {
    MessageEntry: SessionState._message,
    ToolCallEntry: SessionState._tool_call,
    ToolResultEntry: SessionState._tool_result,
    SteeringEntry: SessionState._steering,
    CompactionEntry: SessionState._compaction,
    ModelChangeEntry: SessionState._model_change,
    TitleEntry: SessionState._title,
    InterruptedEntry: SessionState._interrupted,
}


def derive_title(text: str | None, limit: int = 60) -> str | None:
    """A one-line title from a user message (its first line), secrets masked."""
    if not text:
        return None
    for line in title_source(text).splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
    return None


def repair_tool_pairs(messages: list[Message]) -> list[Message]:
    """Every tool call answered, every result matched: what both APIs insist on.

    A crash or abort can leave a call without a result (it gets a short error result), and a
    damaged file a result without its call (dropped). Returns `messages` itself when sound.
    """
    open_calls: dict[str, ToolCall] = {}
    sound = True
    for message in messages:
        if message.tool_calls:
            if open_calls:
                sound = False
                break
            open_calls = {c.id: c for c in message.tool_calls}
        elif message.role == "tool":
            if message.tool_call_id not in open_calls:
                sound = False
                break
            del open_calls[message.tool_call_id]
        elif open_calls:
            sound = False
            break
    if sound and not open_calls:
        return messages
    out: list[Message] = []
    pending: dict[str, ToolCall] = {}

    def close_pending() -> None:
        for call in pending.values():
            out.append(
                Message(
                    role="tool",
                    text=INTERRUPTED_RESULT,
                    tool_call_id=call.id,
                    name=call.name,
                    is_error=True,
                )
            )
        pending.clear()

    for message in messages:
        if message.role == "tool":
            if message.tool_call_id in pending:
                del pending[message.tool_call_id]
                out.append(message)
            continue
        close_pending()
        out.append(message)
        if message.tool_calls:
            pending = {c.id: c for c in message.tool_calls}
    close_pending()
    return out
