"""Handoffs: another session's conversation, condensed to open a session on a new provider."""

from __future__ import annotations

from avatar.sessions.types import Transcript, TranscriptMessage

# About 6k tokens: enough for the thread of a session, small next to any model's window.
DEFAULT_BUDGET = 24_000
_TOOL_OUTPUT = 300  # tool results are the bulkiest and least needed part


def _line(msg: TranscriptMessage) -> str | None:
    if msg.role == "tool":
        text = msg.text.strip()
        if len(text) > _TOOL_OUTPUT:
            text = text[:_TOOL_OUTPUT] + " …"
        return f"[tool result{' (error)' if msg.is_error else ''}] {text}" if text else None
    parts = [msg.text.strip()] if msg.text.strip() else []
    for call in msg.tool_calls:
        arg = call.input if isinstance(call.input, str) else _short(call.input)
        parts.append(f"[tool call {call.name}] {arg}")
    if not parts:
        return None
    return f"{msg.role.upper()}: " + "\n".join(parts)


def _short(value: object) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False) if value is not None else ""
    return text if len(text) <= 200 else text[:200] + " …"


def build_handoff(transcript: Transcript, budget: int = DEFAULT_BUDGET) -> str:
    """The opening context for a new session: the source's transcript, newest turns kept whole.

    When the transcript does not fit, the oldest messages are dropped first (the first user
    message is kept, since it usually states the task) and a line says how many were left out.
    """
    lines = [line for m in transcript.messages if (line := _line(m))]
    info = transcript.info
    head = (
        f"Context handed over from a {info.provider} session ({info.id}"
        + (f", {info.title!r}" if info.title else "")
        + "). Continue the work from here; the conversation so far:"
    )
    if not lines:
        return head + "\n(no messages)"
    first, rest = lines[0], lines[1:]
    kept: list[str] = []
    used = len(head) + len(first)
    for line in reversed(rest):
        if used + len(line) > budget:
            break
        kept.append(line)
        used += len(line)
    kept.reverse()
    dropped = len(rest) - len(kept)
    body = [first]
    if dropped:
        body.append(f"[… {dropped} earlier messages left out …]")
    body.extend(kept)
    return head + "\n\n" + "\n\n".join(body) + "\n\n[end of handed-over context]"


def seed_prompt(handoff: str, prompt: str) -> str:
    """The first prompt of a seeded session: the user's own words, then the handed-over context.

    The user's words come first so every provider titles the new session by them.
    """
    return f"{prompt}\n\n{handoff}"
