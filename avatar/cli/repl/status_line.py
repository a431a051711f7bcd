"""The REPL's status line, fitted to the terminal: its parts are ranked, and the least
important go first when the line is too wide (the hint of what a key does now never goes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from avatar.cli.output.cells import cell_width, clip

SEPARATOR = " · "

# Ranks: the lower, the longer a part stays. HINT is never dropped.
HINT, PROVIDER, MODEL, CONTEXT, TOKENS, COST, ACTIVITY, SESSION, TAIL = range(9)


class Figures(Protocol):
    """The numbers the engine's status carries (`EngineStatus.numbers`)."""

    @property
    def turn_tokens(self) -> int | None:
        """This turn's tokens."""

    @property
    def context_percent(self) -> float | None:
        """The session's context use against the window."""

    @property
    def cost_usd(self) -> float | None:
        """The session's cost."""

    @property
    def turns(self) -> int:
        """The turns finished in this run of the session."""


@dataclass(frozen=True)
class Part:
    """One part of the status line and its rank (see the constants above)."""

    text: str
    rank: int


def figures(numbers: Figures) -> list[Part]:
    """The three numbers (`avatar.engine.numbers`): context use, this turn's tokens, the
    session's cost; one the provider did not report is `?` once a turn has ended, and none
    shows before (nothing is known yet)."""
    known = numbers.turns > 0
    parts: list[Part] = []
    pct = numbers.context_percent
    if pct is not None or known:
        parts.append(Part(f"ctx {pct:.0f}%" if pct is not None else "ctx ?", CONTEXT))
    tokens = numbers.turn_tokens
    if tokens is not None or known:
        parts.append(Part(f"turn {tokens:,} tok" if tokens is not None else "turn ? tok", TOKENS))
    cost = numbers.cost_usd
    if cost is not None or known:
        parts.append(Part(f"${cost:.4f}" if cost is not None else "$?", COST))
    return parts


def fit(parts: list[Part], width: int) -> str:
    """The parts joined, in their order, without the least important ones that do not fit
    in `width` columns; what still does not fit is cut at the end with `…` (measured in a
    terminal's cells: an emoji in the answer's tail takes two)."""
    kept = list(parts)
    while cell_width(SEPARATOR.join(p.text for p in kept)) >= width:
        droppable = [p for p in kept if p.rank != HINT]
        if len(droppable) <= 1:
            break
        kept.remove(max(droppable, key=lambda p: p.rank))
    line = SEPARATOR.join(p.text for p in kept)
    excess = cell_width(line) - width + 1
    rest = [p for p in kept if p.rank != HINT]
    if excess > 0 and rest and cell_width(rest[0].text) > excess + 1:
        short = Part(clip(rest[0].text, cell_width(rest[0].text) - excess), rest[0].rank)
        line = SEPARATOR.join((short if p is rest[0] else p).text for p in kept)
    return line if cell_width(line) < width else clip(line, max(width - 1, 1))
