"""Handoffs: another session's conversation, condensed to open or continue a session on
another provider (docs/design.md §3, `--from` and `/provider`).

Deterministic, no model call: `facts` reads the goal, decisions, files, failures and plan from
the canonical transcript; `render` lays them out with the newest turns verbatim, fitted to a
share of the target model's context window (`window`); secrets are masked by the detector
of `avatar.policy.secrets`; `marker` fences the handed-over text inside a prompt so it never
becomes a title and never nests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from avatar.handoff.window import DEFAULT_SHARE, DEFAULT_WINDOW, handoff_budget
from avatar.policy.secrets import SecretDetector
from avatar.sessions.handoff_marker import strip_handoff

if TYPE_CHECKING:
    from pathlib import Path

    from avatar.policy.secrets import SecretDetector
    from avatar.sessions.types import Transcript

#: The budget when no target is known: a share of the default window.
DEFAULT_TOKENS = handoff_budget(DEFAULT_WINDOW, DEFAULT_SHARE)

__all__ = ["DEFAULT_TOKENS", "build_handoff", "seed_prompt", "strip_handoff"]


def build_handoff(
    transcript: Transcript,
    budget_tokens: int = DEFAULT_TOKENS,
    *,
    since: int | None = None,
    cwd: Path | None = None,
    secrets: SecretDetector | None = None,
    target: tuple[str, str] | None = None,
    held: Transcript | None = None,
) -> str:
    """The structured handoff of `transcript` within `budget_tokens` estimated tokens: its
    facts, and its turns after those of the earlier legs of the chain (the sessions handed
    over into it), the newest first to fit.

    `since` makes a delta: only the messages from that index on (what the target, returned
    to, did not see); `target` (provider, id) is the session returned to, whose own turns
    are left out wherever the chain carried them, and `held` its conversation: no turn it
    holds already (said there, handed over or imported into it) is carried to it again.
    `cwd` adds the project's `git diff --stat` when it is a git repository.
    """
    from dataclasses import replace

    from avatar.handoff.facts import held_lines, read_facts
    from avatar.handoff.git import diff_stat
    from avatar.handoff.render import Source, render

    if secrets is None:
        secrets = SecretDetector()
    # Masked before anything is cut to fit (a secret cut in two would no longer be found).
    transcript = transcript.masked(secrets)
    info = transcript.info
    messages = transcript.messages[since:] if since is not None else transcript.messages
    # A delta goes back to where the pasted context came from: nothing of it is repeated.
    known = held_lines(held.masked(secrets)) if held is not None else frozenset()
    facts = read_facts(
        replace(transcript, messages=messages), inherit=since is None, target=target, known=known
    )
    named = strip_handoff(info.name or info.title or "") or None  # (a rename wins)
    source = Source(info.provider, info.id, named, since is not None)
    stat = diff_stat(cwd) if cwd is not None else None
    return render(facts, source, budget_tokens, git_stat=stat, secrets=secrets)


def seed_prompt(handoff: str, prompt: str) -> str:
    """The first prompt of a seeded session: the user's own words, then the handed-over context.

    The user's words come first so every provider titles the new session by them.
    """
    return f"{prompt}\n\n{handoff}"
