"""`avatar session export ID --format md|html|json`: a session's canonical transcript as a file
a person can read or a script can parse (docs/design.md §3).

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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.core.errors import UsageError
from avatar.core.fileio import atomic_write
from avatar.library.export.doc import (
    EXPORT_VERSION,
    LABELS,
    ExportDoc,
    call_args,
    facts,
    prepare,
)
from avatar.library.export.html import to_html

if TYPE_CHECKING:
    from avatar.policy.secrets import SecretDetector
    from avatar.sessions.types import Transcript

FORMATS = ("md", "html", "json")


def render(transcript: Transcript, fmt: str, secrets: SecretDetector | None = None) -> str:
    """The transcript as `md`, `html` or `json` text, secrets masked."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown export format {fmt!r} (use one of: {', '.join(FORMATS)})")
    doc = prepare(transcript, secrets)
    if fmt == "json":
        return to_json(doc)
    if fmt == "html":
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
