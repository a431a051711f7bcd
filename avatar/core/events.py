"""The one event model every provider speaks.

Bridges translate their agent's wire format into these events; the CLI renders them and never
looks at provider payloads. `chat --json` writes `event.to_json()` per line (`{"v": 1, "type": …}`)
and `parse_event` reads such a line back, checked by pydantic (unknown keys or types refused).
The events themselves are dataclasses made in-process: importing this module loads no
pydantic, whose import (70–130 ms here) every one-shot paid before its agent could start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

__all__ = [
    "SCHEMA_VERSION",
    "BaseEvent",
    "CommandsAvailable",
    "Error",
    "Event",
    "FileDiff",
    "Listener",
    "ModeChanged",
    "Notice",
    "OpenHow",
    "PermissionRequested",
    "Plan",
    "PlanEntry",
    "SessionStarted",
    "StopReason",
    "TextDelta",
    "ThinkingDelta",
    "TitleChanged",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolCallUpdated",
    "TurnFinished",
    "Usage",
    "UserMessage",
    "event_from_dict",
    "parse_event",
]

SCHEMA_VERSION = 1

OpenHow = Literal["new", "loaded", "resumed", "continued", "forked"]
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error"]


@dataclass(kw_only=True)
class BaseEvent:
    """Common fields: `replay` marks history re-sent by an agent while loading a session."""

    # Read by pydantic when `parse_event` checks a JSON event: unknown keys are refused.
    __pydantic_config__: ClassVar[dict[str, str]] = {"extra": "forbid"}

    replay: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The event as `to_json` writes it, before serialising: a dict, `v` first."""
        return {"v": SCHEMA_VERSION, **asdict(self)}

    def to_json(self) -> str:
        """One JSON object, with the schema version `v` first."""
        import json

        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass(kw_only=True)
class TextDelta(BaseEvent):
    """A piece of the assistant's answer."""

    type: Literal["text"] = "text"
    text: str


@dataclass(kw_only=True)
class ThinkingDelta(BaseEvent):
    """A piece of the model's visible reasoning."""

    type: Literal["thinking"] = "thinking"
    text: str


@dataclass(kw_only=True)
class UserMessage(BaseEvent):
    """A user turn, seen when an agent replays history (or echoes steering)."""

    type: Literal["user_message"] = "user_message"
    text: str


@dataclass
class FileDiff:
    """A change a tool call makes to one file, as the agent reports it: the text before (None
    for a new file) and after, whole or a snippet, and the line of the file the snippet starts
    at when the agent says (ACP `diff` content and its tool-call location)."""

    path: str
    old_text: str | None
    new_text: str
    line: int | None = None


@dataclass(kw_only=True)
class ToolCallStarted(BaseEvent):
    """The agent began a tool call."""

    type: Literal["tool_call_started"] = "tool_call_started"
    id: str
    name: str
    title: str | None = None
    kind: str | None = None
    input: dict[str, Any] | None = None
    diffs: list[FileDiff] = field(default_factory=list)


@dataclass(kw_only=True)
class ToolCallUpdated(BaseEvent):
    """Progress of a running tool call (status change or partial output)."""

    type: Literal["tool_call_updated"] = "tool_call_updated"
    id: str
    status: str | None = None
    title: str | None = None
    output: str | None = None
    #: The changes as now reported (replacing any reported before), when the update has some.
    diffs: list[FileDiff] = field(default_factory=list)


@dataclass(kw_only=True)
class ToolCallFinished(BaseEvent):
    """A tool call ended; `is_error` when it failed or was refused."""

    type: Literal["tool_call_finished"] = "tool_call_finished"
    id: str
    output: str = ""
    is_error: bool = False
    diffs: list[FileDiff] = field(default_factory=list)


@dataclass(kw_only=True)
class PermissionRequested(BaseEvent):
    """The agent asked to do something that changes state; `decision` is what avatar answered."""

    type: Literal["permission"] = "permission"
    id: str
    title: str
    kind: str | None = None
    decision: Literal["allow", "deny", "pending"] = "pending"
    reason: str | None = None
    #: The changes the action would make, as the request states them (an ACP agent's `diff`
    #: content; Claude Code's edit or write input), so that the question can show them.
    diffs: list[FileDiff] = field(default_factory=list)


@dataclass
class PlanEntry:
    """One line of an agent's plan."""

    content: str
    status: str = "pending"
    priority: str | None = None


@dataclass(kw_only=True)
class Plan(BaseEvent):
    """The agent's current plan (replaces any earlier plan)."""

    type: Literal["plan"] = "plan"
    entries: list[PlanEntry] = field(default_factory=list)


@dataclass(kw_only=True)
class Usage(BaseEvent):
    """The figures of the status line, as one agent reports them; each is None when the
    agent does not report it (shown as unknown, never replaced by another kind of figure).

    - the token counts are this turn's so far (every model call of the turn): `turn_tokens`;
    - `cost_usd` is the session's cost so far;
    - `context_used` / `context_size`: the session's context, against the model's window.
    """

    type: Literal["usage"] = "usage"
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost_usd: float | None = None
    context_used: int | None = None
    context_size: int | None = None

    @property
    def turn_tokens(self) -> int | None:
        """This turn's tokens, read and written (cache included); None when not reported."""
        counts = (
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
        )
        if all(c is None for c in counts):
            return None
        return sum(c or 0 for c in counts)

    @property
    def context_percent(self) -> float | None:
        """Context window fill in percent, when both numbers are known."""
        if self.context_used is None or not self.context_size:
            return None
        return 100.0 * self.context_used / self.context_size


@dataclass(kw_only=True)
class SessionStarted(BaseEvent):
    """A session is open: how it was opened, on which provider."""

    type: Literal["session"] = "session"
    session_id: str
    provider: str
    how: OpenHow = "new"
    model: str | None = None
    cwd: str | None = None


@dataclass(kw_only=True)
class TitleChanged(BaseEvent):
    """The agent (re)named the session."""

    type: Literal["title"] = "title"
    title: str


@dataclass(kw_only=True)
class CommandsAvailable(BaseEvent):
    """The agent's own slash commands."""

    type: Literal["commands"] = "commands"
    commands: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class ModeChanged(BaseEvent):
    """The agent switched mode (e.g. plan, auto-edit)."""

    type: Literal["mode"] = "mode"
    mode: str


@dataclass(kw_only=True)
class TurnFinished(BaseEvent):
    """The turn ended."""

    type: Literal["turn_finished"] = "turn_finished"
    stop_reason: StopReason = "end_turn"


@dataclass(kw_only=True)
class Error(BaseEvent):
    """Something failed; `detail` carries e.g. the agent's last stderr lines."""

    type: Literal["error"] = "error"
    message: str
    detail: str | None = None


@dataclass(kw_only=True)
class Notice(BaseEvent):
    """Something the user should know: a fallback taken, a permission denied, a warning."""

    type: Literal["notice"] = "notice"
    message: str
    level: Literal["info", "warning"] = "info"


Event = (
    TextDelta
    | ThinkingDelta
    | UserMessage
    | ToolCallStarted
    | ToolCallUpdated
    | ToolCallFinished
    | PermissionRequested
    | Plan
    | Usage
    | SessionStarted
    | TitleChanged
    | CommandsAvailable
    | ModeChanged
    | TurnFinished
    | Error
    | Notice
)
"""Any one event (its `type` tells which)."""

_adapter: Any = None


def event_from_dict(data: dict[str, Any]) -> BaseEvent:
    """The event a trusted `to_dict()` made (avatar's own server): rebuilt without pydantic,
    which a client of the server does not load; `parse_event` checks untrusted input."""
    classes = {c.__dataclass_fields__["type"].default: c for c in Event.__args__}
    fields = {k: v for k, v in data.items() if k != "v"}
    cls = classes[fields["type"]]
    if "diffs" in fields:
        fields["diffs"] = [FileDiff(**d) for d in fields["diffs"]]
    if "entries" in fields:
        fields["entries"] = [PlanEntry(**e) for e in fields["entries"]]
    event: BaseEvent = cls(**fields)
    return event


def parse_event(data: str | bytes | dict[str, Any]) -> BaseEvent:
    """Parse one event from its JSON form (the `v` key is accepted and ignored); a pydantic
    ValidationError (a ValueError) when it is not one."""
    global _adapter
    if _adapter is None:
        from typing import Annotated

        from pydantic import Field, TypeAdapter

        _adapter = TypeAdapter(Annotated[Event, Field(discriminator="type")])
    if isinstance(data, (str, bytes)):
        import json

        data = json.loads(data)
    if not isinstance(data, dict):
        raise ValueError("an event is a JSON object")
    parsed: BaseEvent = _adapter.validate_python({k: v for k, v in data.items() if k != "v"})
    return parsed


Listener = Callable[[BaseEvent], None]
"""Receives the events outside turns (`Engine.send()` yields a turn's own): session opened,
notices, replayed history, errors of an agent that died between turns."""
