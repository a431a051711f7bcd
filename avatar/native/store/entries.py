"""The native session file format (docs/design.md §6), as pydantic models: the on-disk boundary.

Line 1 is a `SessionHeader`; every later line is one entry with `type`, `id`, `timestamp`.
Unknown entry types are skipped on load (forward compatibility), never fatal.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

FORMAT_VERSION = 1


def now_iso() -> str:
    """The current UTC time as ISO-8601 with milliseconds and a `Z`."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_entry_id() -> str:
    """A 12-hex-digit entry id (unique within a session; collisions ~1e-5 at 100k entries)."""
    return secrets.token_hex(6)


class _Line(BaseModel):
    # `ignore`: a newer avatar may add fields; an older one still reads the line.
    # defer_build: validators are built on first use, so entry types a run never writes or
    # reads cost nothing at import.
    model_config = ConfigDict(extra="ignore", defer_build=True)


class SessionHeader(_Line):
    """Line 1 of a session file."""

    type: Literal["session"] = "session"
    version: int = FORMAT_VERSION
    id: str
    created: str = Field(default_factory=now_iso)
    cwd: str
    provider: str = "native"
    model: str | None = None
    parent_id: str | None = None
    branch_point: str | None = None  # last parent entry copied into a fork
    preset: str | None = None


class BaseEntry(_Line):
    """Fields every entry line has: `type`, `id`, `timestamp`."""

    type: str  # each entry narrows it to a Literal; declared here so it is written first
    id: str = Field(default_factory=new_entry_id)
    timestamp: str = Field(default_factory=now_iso)


class EntryUsage(_Line):
    """Token use of one model call, with its cost in USD."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0


class MessageEntry(BaseEntry):
    """A user or assistant message (an assistant's tool calls follow as `tool_call` entries)."""

    type: Literal["message"] = "message"
    role: Literal["user", "assistant"]
    text: str = ""
    thinking: str | None = None
    model: str | None = None
    usage: EntryUsage | None = None
    stop_reason: str | None = None


class ToolCallEntry(BaseEntry):
    """A tool call of the assistant message just before it."""

    type: Literal["tool_call"] = "tool_call"
    call_id: str
    name: str
    input: dict[str, Any] = {}


class ToolResultEntry(BaseEntry):
    """The result of one tool call."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str = ""
    output: str = ""
    is_error: bool = False


class SteeringEntry(BaseEntry):
    """Text the user typed while a turn ran, injected before the next model call."""

    type: Literal["steering"] = "steering"
    text: str


class ModelChangeEntry(BaseEntry):
    """The session switched model."""

    type: Literal["model_change"] = "model_change"
    model: str


class CompactionEntry(BaseEntry):
    """Older messages were compacted: context = summary (if any) + messages from `first_kept`."""

    type: Literal["compaction"] = "compaction"
    strategy: str
    summary: str | None = None
    first_kept: str | None = None  # entry id of the first message kept; None = none kept
    tokens_before: int = 0


class InterruptedEntry(BaseEntry):
    """A turn was aborted by the user."""

    type: Literal["interrupted"] = "interrupted"
    reason: str = "user"


class TitleEntry(BaseEntry):
    """The session's title was set."""

    type: Literal["title"] = "title"
    title: str


Entry = (
    MessageEntry
    | ToolCallEntry
    | ToolResultEntry
    | SteeringEntry
    | ModelChangeEntry
    | CompactionEntry
    | InterruptedEntry
    | TitleEntry
)

_ENTRY_TYPES = {
    cls.model_fields["type"].default: cls
    for cls in (
        MessageEntry,
        ToolCallEntry,
        ToolResultEntry,
        SteeringEntry,
        ModelChangeEntry,
        CompactionEntry,
        InterruptedEntry,
        TitleEntry,
    )
}
KNOWN_TYPES = frozenset(_ENTRY_TYPES)

_adapter: TypeAdapter[Entry] | None = None


def _entry_adapter() -> TypeAdapter[Entry]:
    global _adapter
    if _adapter is None:
        _adapter = TypeAdapter(Annotated[Entry, Field(discriminator="type")])
    return _adapter


def parse_entry(line: str | bytes) -> Entry:
    """Parse one entry line; raises ValueError (pydantic ValidationError) when malformed."""
    return _entry_adapter().validate_json(line)


def entry_parser() -> Callable[[str | bytes], Entry]:
    """`parse_entry` without the TypeAdapter wrapper: the hot loop of loading a session."""
    return _entry_adapter().validator.validate_json


def parse_header(line: str | bytes) -> SessionHeader:
    """Parse the header line; raises ValueError when it is not one."""
    return SessionHeader.model_validate_json(line)
