"""`avatar session export ID --format md|html|json`: a session's canonical transcript as a file
a person can read or a script can parse (DESIGN §3).

Every format carries the messages numbered as `session show` numbers them, the tool calls with
their arguments, the tool results (cut to `RESULT_CHARS`), times, model and provider. Secrets
(`avatar.policy.secrets`: the values of key variables in the environment, key shapes,
password assignments, private keys) are masked in all of them, in the session facts as much
as in the messages. The HTML page is `avatar.library.export.html`.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.core.fileio import atomic_write

if TYPE_CHECKING:
    from avatar.policy.secrets import SecretDetector
    from avatar.sessions.types import Transcript, TranscriptMessage

FORMATS = ("md", "html", "json")
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
        """The session's title, else its provider and id."""
        return str(self.session.get("title") or f"{self.session['provider']} session")


def prepare(transcript: Transcript, secrets: SecretDetector | None = None) -> ExportDoc:
    """Number, mask and cut a transcript; tool results are attached to their calls too."""
    if secrets is None:
        from avatar.policy.secrets import SecretDetector

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


def render(transcript: Transcript, fmt: str, secrets: SecretDetector | None = None) -> str:
    """The transcript as `md`, `html` or `json` text, secrets masked."""
    if fmt not in FORMATS:
        from avatar.core.errors import UsageError

        raise UsageError(f"unknown export format {fmt!r} (use one of: {', '.join(FORMATS)})")
    doc = prepare(transcript, secrets)
    if fmt == "json":
        return to_json(doc)
    if fmt == "html":
        from avatar.library.export.html import to_html

        return to_html(doc)
    return to_markdown(doc)


# -- json ------------------------------------------------------------------------------------


def to_json(doc: ExportDoc) -> str:
    """`{"v": 1, "session": {…list fields…}, "messages": [{role, text, tool_calls, time}]}`;
    a tool message also names the call it answers (`tool_call_id`, `is_error`)."""
    messages = []
    for m in doc.messages:
        item: dict[str, Any] = {
            "n": m.n,
            "role": m.role,
            "text": m.text,
            "tool_calls": [{"id": c.id, "name": c.name, "input": c.input} for c in m.calls],
            "time": m.time.isoformat() if m.time else None,
        }
        if m.role == "tool":
            item.update(tool_call_id=m.tool_call_id, is_error=m.is_error)
            if m.truncated:
                item["truncated_chars"] = m.truncated
        messages.append(item)
    data = {"v": EXPORT_VERSION, "session": doc.session, "messages": messages}
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


# -- markdown --------------------------------------------------------------------------------

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


def _fence(text: str, lang: str = "") -> str:
    # A fence longer than any run of backticks inside, so the block cannot end early.
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def to_markdown(doc: ExportDoc) -> str:
    """A Markdown document: facts, then one numbered section per message."""
    out = [f"# {doc.title}", ""]
    out += [f"- **{k}**: `{v}`" for k, v in facts(doc)]
    for m in doc.messages:
        when = f" · {m.time.isoformat()}" if m.time else ""
        label = LABELS[m.role] + (" (error)" if m.is_error else "")
        out += ["", f"## {m.n}. {label}{when}", ""]
        if m.role == "tool":
            out.append(_fence(m.text or "(no output)"))
            if m.truncated:
                out.append(f"\n… {m.truncated} more characters not exported")
        elif m.text.strip():
            out.append(m.text.rstrip())
        for call in m.calls:
            lang = "" if isinstance(call.input, str) else "json"
            out += ["", f"**Tool call** `{call.name}`", "", _fence(call_args(call), lang)]
    if doc.skipped_lines:
        out += ["", f"_({doc.skipped_lines} unreadable lines skipped)_"]
    return "\n".join(out) + "\n"


def write_export(output: Path | None, text: str) -> str:
    """`text`, written to `output` when given: in a file the owner alone reads, whole (beside
    it, then renamed; a symlink is followed to its file). A FIFO or device the user names
    (`-o /dev/stdout`) is written through, as asked."""
    if output is not None:
        real = Path(os.path.realpath(output))
        try:
            special = not stat.S_ISREG(real.stat().st_mode)
        except FileNotFoundError:
            special = False
        if special:
            with real.open("wb") as f:
                f.write(text.encode("utf-8"))
        else:
            atomic_write(real, text.encode("utf-8"), mode=0o600)
    return text
