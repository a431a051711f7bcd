"""Text an agent CLI puts into a conversation that neither the user nor the model said: the
context it sends as user-role messages (Gemini's `<session_context>`, codex's
`<environment_context>`, Claude Code's reminders: each store's `INJECTED_PREFIXES`, which its
reader leaves out of its files) and notices it streams as answer text (codex's warning that it
knows no metadata for the model). The history an agent replays and avatar's own copy of the
turns leave them out, as the stores' readers do."""

from __future__ import annotations

import re
from functools import cache

# codex-acp streams this as the first text of a turn when its model catalog lacks the model.
_ANSWER_NOTICES = re.compile(
    r"\A\s*Warning: Model metadata for `[^`\n]*` not found\.[^\n]*(?:\n\s*|\Z)"
)


@cache
def _prefixes() -> tuple[str, ...]:
    # The stores' own lists (loaded when a replayed history is first read, not at start-up),
    # less the one-character ones (Gemini's "/" and "?"): typed by a user of another agent,
    # those are words.
    from avatar.sessions import claude, codex_rollout, gemini

    every = claude.INJECTED_PREFIXES + codex_rollout.INJECTED_PREFIXES + gemini.INJECTED_PREFIXES
    return tuple(p for p in every if len(p) > 1)


def inserted_user_message(text: str) -> bool:
    """True when a user-role message is context an agent CLI inserted, not the user's words."""
    from avatar.sessions.jsonl import is_injected

    return is_injected(text, _prefixes())


def said_in_answer(text: str) -> str:
    """An answer without the notices an agent CLI streamed as its text."""
    return _ANSWER_NOTICES.sub("", text, count=1)
