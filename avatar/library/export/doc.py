"""A transcript made ready for export: numbered messages, their tool calls, results cut to
`RESULT_CHARS`, secrets masked; and what the md and html pages both show of it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from avatar.policy.secrets import SecretDetector

if TYPE_CHECKING:
    from avatar.policy.secrets import SecretDetector
    from avatar.sessions.types import Transcript, TranscriptMessage

EXPORT_VERSION = 1
#: A tool's output is often a whole file or a long log: the export keeps its head.
RESULT_CHARS = 4000


@dataclass
class ExportCall:
    """One tool call, with the result that answered it (when the transcript has one)."""

    id: str | None
    name: str
    input: Any
    result: ExportMessage | None = None


@dataclass
class ExportMessage:
    """One transcript message, numbered, redacted and with tool output cut."""

    n: int
    role: str
    text: str
    time: datetime | None
    calls: list[ExportCall] = field(default_factory=list)
    tool_call_id: str | None = None
    is_error: bool = False
    truncated: int = 0  # characters of a tool result left out
    answers: int | None = None  # for a tool result: the message holding its call


@dataclass
class ExportDoc:
    """A transcript ready to render: session facts and messages, secrets masked."""

    session: dict[str, Any]
    messages: list[ExportMessage]
    skipped_lines: int = 0

    @property
    def title(self) -> str:
        """The session's name (`session rename`), else its title, else its provider."""
        session = self.session
        return str(session.get("name") or session.get("title") or f"{session['provider']} session")


def prepare(transcript: Transcript, secrets: SecretDetector | None = None) -> ExportDoc:
    """Number, mask and cut a transcript; tool results are attached to their calls too."""
    if secrets is None:
        secrets = SecretDetector()
    session = secrets.mask_data(transcript.info.to_public())
    calls: dict[str, tuple[ExportCall, int]] = {}
    out: list[ExportMessage] = []
    for n, m in enumerate(transcript.messages, 1):
        out.append(_message(n, m, secrets))
        for call in out[-1].calls:
            if call.id:
                calls[call.id] = (call, n)
        if m.role == "tool" and m.tool_call_id in calls:
            call, out[-1].answers = calls[m.tool_call_id]
            call.result = out[-1]
    return ExportDoc(session, out, transcript.skipped_lines)


def _message(n: int, m: TranscriptMessage, secrets: SecretDetector) -> ExportMessage:
    text, cut = secrets.mask(m.text), 0
    if m.role == "tool" and len(text) > RESULT_CHARS:
        text, cut = text[:RESULT_CHARS], len(text) - RESULT_CHARS
    return ExportMessage(
        n=n,
        role=m.role,
        text=text,
        time=m.timestamp,
        calls=[ExportCall(c.id, c.name, secrets.mask_data(c.input)) for c in m.tool_calls],
        tool_call_id=m.tool_call_id,
        is_error=m.is_error,
        truncated=cut,
    )


LABELS = {"user": "You", "assistant": "Assistant", "tool": "Tool result", "system": "System"}


def facts(doc: ExportDoc) -> list[tuple[str, str]]:
    """The session facts shown at the top of the md and html exports."""
    s = doc.session
    keys = ("provider", "model", "id", "cwd", "created", "updated")
    return [(k, str(s[k])) for k in keys if s.get(k) is not None]


def call_args(call: ExportCall) -> str:
    """A tool call's arguments as text: JSON for structured input."""
    if isinstance(call.input, str):
        return call.input
    return json.dumps(call.input, ensure_ascii=False, indent=2)
