"""Provider-neutral conversation and stream types (plain dataclasses; no pydantic inside).

A conversation is a system prompt plus `Message`s: user text, assistant text with tool calls,
and tool results. Each client translates them to its wire format and translates the stream
back into `StreamPart`s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from avatar.core.prompts import Image

Role = Literal["user", "assistant", "tool"]

#: What an image counts as in chars/4 estimates (~1,600 tokens, a screenshot's usual cost).
IMAGE_CHARS = 6400


@dataclass(slots=True)
class ToolCall:
    """A complete tool call from the model; `error` is set when its arguments were not JSON."""

    id: str
    name: str
    arguments: dict[str, Any]
    error: str | None = None


@dataclass(slots=True)
class Message:
    """One conversation message.

    `entry_id` is the session entry it came from (compaction cuts by entry id); `tool_call_id`
    and `name` are set on tool results. `images` (user messages) are sent with the text; the
    session file keeps only their names, in the text.
    """

    role: Role
    text: str = ""
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    entry_id: str | None = None
    images: tuple[Image, ...] = ()

    def chars(self) -> int:
        """Characters the message occupies (for chars/4 token estimates)."""
        n = len(self.text) + IMAGE_CHARS * len(self.images)
        if self.tool_calls:
            for call in self.tool_calls:
                n += len(call.name) + len(str(call.arguments))
        return n


@dataclass(slots=True)
class ToolSpec:
    """A tool as offered to the model: name, description and JSON Schema of the arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass
class ChatRequest:
    """Everything one model call needs."""

    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int | None = None
    temperature: float | None = None


@dataclass(slots=True)
class TextPart:
    """A piece of answer text."""

    text: str


@dataclass(slots=True)
class ThinkingPart:
    """A piece of visible reasoning."""

    text: str


@dataclass(slots=True)
class ToolCallPart:
    """A tool call whose arguments are complete."""

    call: ToolCall


@dataclass(slots=True)
class UsagePart:
    """Token counts of one call; `input_tokens` excludes cache reads and writes."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total(self) -> int:
        """Tokens the conversation occupies after this call."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )


StopReason = Literal["end_turn", "tool_use", "max_tokens", "refusal", "error"]


@dataclass(slots=True)
class DonePart:
    """The stream ended normally."""

    stop_reason: StopReason = "end_turn"


StreamPart = TextPart | ThinkingPart | ToolCallPart | UsagePart | DonePart
