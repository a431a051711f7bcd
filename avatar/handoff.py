"""Handoffs: another session's conversation, condensed to open a session on a new provider."""

from __future__ import annotations

from typing import TYPE_CHECKING

from avatar.sessions.types import SessionInfo, Transcript, TranscriptMessage

if TYPE_CHECKING:
    from avatar.events import BaseEvent

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


class LiveTranscript:
    """What this run saw of the open session: the handoff's source when no store has it."""

    def __init__(self, info: SessionInfo) -> None:
        self.info = info
        self.messages: list[TranscriptMessage] = []
        self._answer: list[str] = []
        self._tools: list[str] = []
        self._last: tuple[str, list[str]] = ("", [])

    def prompt(self, text: str) -> None:
        """The user sent `text`."""
        self.messages.append(TranscriptMessage(role="user", text=text))
        self._answer, self._tools = [], []

    def observe(self, event: BaseEvent) -> None:
        """An event of the running turn: answer text and tool titles are kept, the turn's
        end closes it."""
        from avatar.events import TextDelta, ToolCallStarted, TurnFinished

        if event.replay:
            return
        if isinstance(event, TextDelta):
            self._answer.append(event.text)
        elif isinstance(event, ToolCallStarted):
            self._tools.append(event.title or event.name)
        elif isinstance(event, TurnFinished):
            answer = "".join(self._answer)
            if answer:
                self.messages.append(TranscriptMessage(role="assistant", text=answer))
            self._last = (answer, self._tools)
            self._answer, self._tools = [], []

    def last_turn(self) -> tuple[str, list[str]]:
        """The answer text and tool titles of the turn that ended last."""
        return self._last

    def transcript(self) -> Transcript | None:
        """The conversation seen so far, or None when nothing was said."""
        return Transcript(info=self.info, messages=list(self.messages)) if self.messages else None
