"""Compaction strategies (docs/design.md §5): what to do when the context fills up.

A strategy looks at the current context and proposes a `CompactionEntry` — a summary (or
none) plus the first message to keep. The session records it; folding that entry rebuilds
the context, live and on every later resume alike. Cuts happen only before a user message
(or, inside one huge turn, before an assistant message), so a tool call is never separated
from its result.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable

from avatar.native.llm.types import Message
from avatar.native.store.entries import CompactionEntry

Summarizer = Callable[[list[Message]], Awaitable[str]]
"""Turns older messages into a summary (an LLM call made by the session)."""

SUMMARY_SYSTEM = (
    "You condense coding-agent conversations so the work can continue in a fresh context."
)
SUMMARY_INSTRUCTIONS = """Summarize the conversation above for the agent that will continue \
it. Keep: the user's goals and constraints, decisions made and why, files read or changed \
(with paths), commands run and their important results or errors, the current state, and \
what remains to be done. Be concise but complete; write it as notes, not as a dialogue."""

MAX_RESULT_CHARS = 2000


def estimate_tokens(messages: list[Message]) -> int:
    """chars/4 over `messages`."""
    return sum(m.chars() for m in messages) // 4


def choose_cut(
    messages: list[Message], keep_tokens: int, *, allow_assistant: bool, force: bool
) -> int | None:
    """Index of the first message to keep, or None when there is nothing to drop.

    Whole turns first: the earliest user message whose tail fits in `keep_tokens`. When even
    the last turn is bigger and `allow_assistant`, a cut before one of its assistant messages
    (so tool calls stay with their results); else the last turn is kept whole. With `force`
    (a manual compaction) and a context that would fit anyway, only the last turn is kept.
    """
    users = [i for i, m in enumerate(messages) if i > 0 and m.role == "user"]
    last_user = users[-1] if users else 0
    inner = [i for i, m in enumerate(messages) if i > last_user and i > 0 and m.role == "assistant"]
    if not users and not (allow_assistant and inner):
        return None
    suffix = [0] * (len(messages) + 1)
    for i in range(len(messages) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + messages[i].chars() // 4
    if force and suffix[0] <= keep_tokens:
        return users[-1] if users else inner[-1]
    for i in users:
        if suffix[i] <= keep_tokens:
            return i
    if allow_assistant:
        for i in inner:
            if suffix[i] <= keep_tokens:
                return i
        if inner:
            return inner[-1]
    return users[-1] if users else None


class CompactionStrategy(ABC):
    """Proposes how to shrink a context."""

    name: str = "none"

    @abstractmethod
    async def plan(
        self,
        messages: list[Message],
        *,
        keep_tokens: int,
        summarize: Summarizer | None,
        force: bool = False,
    ) -> CompactionEntry | None:
        """The compaction to record, or None to leave the context as it is."""


class NoCompaction(CompactionStrategy):
    """Never compacts (the provider's own context error is the limit)."""

    name = "none"

    async def plan(
        self,
        messages: list[Message],
        *,
        keep_tokens: int,
        summarize: Summarizer | None,
        force: bool = False,
    ) -> CompactionEntry | None:
        """Nothing, always."""
        return None


class SlidingWindow(CompactionStrategy):
    """Drops the oldest messages; the first kept one is a user message."""

    name = "sliding"

    async def plan(
        self,
        messages: list[Message],
        *,
        keep_tokens: int,
        summarize: Summarizer | None,
        force: bool = False,
    ) -> CompactionEntry | None:
        """Keep the newest turns that fit in `keep_tokens`."""
        cut = choose_cut(messages, keep_tokens, allow_assistant=False, force=force)
        if cut is None:
            return None
        return CompactionEntry(
            strategy=self.name,
            summary=None,
            first_kept=messages[cut].entry_id,
            tokens_before=estimate_tokens(messages),
        )


class SummaryCompaction(CompactionStrategy):
    """Replaces older messages with an LLM-written summary; recent turns stay verbatim."""

    name = "summary"

    async def plan(
        self,
        messages: list[Message],
        *,
        keep_tokens: int,
        summarize: Summarizer | None,
        force: bool = False,
    ) -> CompactionEntry | None:
        """Summarize everything before the cut."""
        if summarize is None:
            raise ValueError("SummaryCompaction needs a summarizer")
        cut = choose_cut(messages, keep_tokens, allow_assistant=True, force=force)
        if cut is None:
            return None
        summary = (await summarize(messages[:cut])).strip()
        if not summary:
            return None
        return CompactionEntry(
            strategy=self.name,
            summary=summary,
            first_kept=messages[cut].entry_id,
            tokens_before=estimate_tokens(messages),
        )


def strategy_for(name: str | None) -> CompactionStrategy:
    """The strategy a config value names (`providers.native.compaction`; default summary)."""
    if name == "none":
        return NoCompaction()
    if name == "sliding":
        return SlidingWindow()
    return SummaryCompaction()


def transcript_for_summary(messages: list[Message], max_chars: int) -> str:
    """Older messages as plain text for the summarizer, within `max_chars`.

    Tool results are clipped; when still too long, the start (goals, an earlier summary) and
    the end (the latest state) are kept and the middle is cut.
    """
    lines: list[str] = []
    for m in messages:
        if m.role == "tool":
            text = m.text
            if len(text) > MAX_RESULT_CHARS:
                text = text[:MAX_RESULT_CHARS] + f"… [{len(m.text) - MAX_RESULT_CHARS} more chars]"
            status = " (error)" if m.is_error else ""
            lines.append(f"[tool result {m.name or ''}{status}]: {text}")
            continue
        if m.text:
            lines.append(f"[{m.role}]: {m.text}")
        for call in m.tool_calls or ():
            lines.append(f"[assistant called {call.name}]: {call.arguments}")
    text = "\n\n".join(lines)
    if len(text) <= max_chars:
        return text
    head = max_chars // 5
    tail = max_chars - head
    return text[:head] + "\n\n[… middle of the conversation omitted …]\n\n" + text[-tail:]
