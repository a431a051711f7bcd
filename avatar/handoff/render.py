"""A handoff as text: the facts of the source session in sections, then its newest turns
verbatim, fitted to a budget of estimated tokens (the oldest turns go first; the goal and the
file lists are never dropped). The turns of a chain's earlier legs share the one budget, each
run of them under its leg line (`avatar.handoff.legs`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from avatar.handoff.facts import HandoffFacts, section
from avatar.handoff.legs import TURNS_HEADING, Leg, Turn, leg_line, turn_lines
from avatar.handoff.window import estimate_tokens
from avatar.policy.secrets import SecretDetector
from avatar.sessions.handoff_marker import END, START

_FILES = 300  # file names listed at most per list (the rest counted)


@dataclass(frozen=True)
class Source:
    """Where a handoff comes from."""

    provider: str
    session_id: str
    title: str | None = None
    delta: bool = False  # only what happened there since the target last saw it


def _files(names: list[str]) -> list[str]:
    shown = [f"- {n}" for n in names[:_FILES]]
    if len(names) > _FILES:
        shown.append(f"(and {len(names) - _FILES} more)")
    return shown


def _sections(facts: HandoffFacts, git_stat: str | None, source: Source) -> list[str]:
    """The fixed part: kept whole whatever the budget."""
    title = f", {source.title!r}" if source.title else ""
    where = f"{source.provider} session {source.session_id}{title}"
    if source.delta:
        intro = (
            f"{START} from {where} ===\n"
            "You are back in this session. Meanwhile the work went on in another agent's "
            "session; this is what happened there. Take it into account and continue."
        )
    else:
        intro = (
            f"{START} from {where} ===\n"
            "You are taking over this work from another agent. A summary of its session "
            "follows, then its most recent turns. Continue from there."
        )
    out = [intro]
    if source.delta:  # the target knows its goal: only how it changed meanwhile
        if facts.goal_changes:
            changes = [f"- {c}" for c in facts.goal_changes]
            out.append("\n".join(["## Changes to the goal", *changes]))
    elif facts.goal:
        goal = [f"## Goal\n{facts.goal}"]
        goal += [f"- {c}" for c in facts.goal_changes]
        out.append("\n".join(goal))
    if facts.decisions:
        out.append(
            "\n".join(
                [
                    "## Decisions and constraints the user stated",
                    *[f"- {d}" for d in facts.decisions],
                ]
            )
        )
    if facts.files_changed:
        out.append("\n".join(["## Files changed", *_files(facts.files_changed)]))
    if facts.files_read:
        out.append("\n".join(["## Files read", *_files(facts.files_read)]))
    if git_stat:
        out.append(f"## Uncommitted changes (git diff --stat)\n{git_stat}")
    if facts.failures:
        lines = ["## Commands that failed"]
        for cmd, tail in facts.failures:
            lines.append(f"- `{cmd}`" + (":\n  " + tail.replace("\n", "\n  ") if tail else ""))
        out.append("\n".join(lines))
    if facts.plan:
        marks = {"completed": "x", "done": "x", "in_progress": "~"}
        out.append(
            "\n".join(["## Plan", *[f"- [{marks.get(s, ' ')}] {step}" for s, step in facts.plan]])
        )
    return out


def _fit(
    turns: list[Turn], budget_tokens: int, clean: Callable[[str], str], own: Leg
) -> list[Turn]:
    """The newest `turns` that fit in `budget_tokens`, oldest first (a leg line costs too;
    the newest turn alone is cut to fit rather than dropped)."""
    kept: list[Turn] = []
    used, leg = 0, None
    for turn in reversed(turns):
        line = clean(turn.line)
        cost = estimate_tokens(line) + 1
        if (turn.leg or own) != leg:  # (counted even where no leg line is needed)
            cost += estimate_tokens(leg_line(turn.leg or own)) + 1
        if used + cost > budget_tokens:
            room = (budget_tokens - used) * 4 - 20
            if not kept and room > 200:
                kept.append(Turn(line[: room // 2] + " … " + line[-room // 2 :], turn.leg))
            break
        kept.append(Turn(line, turn.leg))
        used, leg = used + cost, turn.leg or own
    kept.reverse()
    return kept


def render(
    facts: HandoffFacts,
    source: Source,
    budget_tokens: int,
    *,
    git_stat: str | None = None,
    secrets: SecretDetector | None = None,
) -> str:
    """The handoff text within `budget_tokens` (estimated), secrets masked."""
    clean = (secrets or SecretDetector()).mask
    fixed = clean("\n\n".join(_sections(facts, git_stat, source)))
    tail = "\n\n" + END
    heading = "\n\n" + TURNS_HEADING
    if not facts.turns:
        return fixed + tail
    used = estimate_tokens(fixed + tail + heading) + 20  # the "left out" line
    own = (source.provider, source.session_id)
    kept = _fit(facts.turns, budget_tokens - used, clean, own)
    dropped = len(facts.turns) - len(kept) + facts.left_out
    body = [f"[… {dropped} earlier messages left out …]"] if dropped else []
    body += turn_lines(kept, own)
    return fixed + heading + "\n\n" + "\n\n".join(body) + tail


#: At most this much of an agent's prose summary goes on top of a handoff.
SUMMARY_CHARS = 4_000


def with_summary(handoff: str, provider: str, summary: str) -> str:
    """`handoff` with the source agent's own prose `summary` on top, after its first
    paragraph (the marker and the note to the new agent)."""
    if len(summary) > SUMMARY_CHARS:
        summary = summary[:SUMMARY_CHARS].rstrip() + " […]"
    intro, _, rest = handoff.partition("\n\n")
    return f"{intro}\n\n## Summary by {provider}, in its own words\n{summary}\n\n{rest}"


def describe(text: str) -> str:
    """A handoff in one line: its size and what it holds (what the REPL shows of it)."""
    parts = [f"~{estimate_tokens(text):,} tokens"]
    if re.search(r"^## Summary by ", text, re.M):
        parts.append("a summary")
    if "\n## Goal\n" in text:
        parts.append("the goal")
    for heading, what in (
        ("Files changed", "files changed"),
        ("Files read", "files read"),
        ("Commands that failed", "failed commands"),
        ("Decisions", "decisions"),
    ):
        if n := sum(ln.startswith("- ") for ln in section(text, heading)):
            parts.append(f"{n} {what}")
    turns = len(re.findall(r"^(?:USER|ASSISTANT): ", text, re.M))
    left = re.search(r"\[… (\d+) earlier messages left out …\]", text)
    parts.append(
        f"{turns} recent messages" + (f" ({left.group(1)} older left out)" if left else "")
    )
    return ", ".join(parts)
