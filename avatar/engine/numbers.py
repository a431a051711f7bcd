"""The status line's numbers, defined once for every provider: this turn's tokens, the
session's context use against the model's window, and the session's cost. Each provider fills
them from its `Usage` events or leaves them unknown (None); none is replaced by a figure of
another kind (a session total for a turn's count, a process's cost for the session's)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from avatar.core.events import BaseEvent, Usage


@dataclass(frozen=True)
class Numbers:
    """The three figures (None: the provider did not report it); `turns` counts the turns
    finished in this run of the session (before the first, nothing is known yet)."""

    turn_tokens: int | None = None
    context_used: int | None = None
    context_size: int | None = None
    cost_usd: float | None = None
    turns: int = 0

    @property
    def context_percent(self) -> float | None:
        """The context window's fill in percent, when both counts are known."""
        if self.context_used is None or not self.context_size:
            return None
        return 100.0 * self.context_used / self.context_size

    def to_dict(self) -> dict[str, Any]:
        """As the server sends them to another client (`avatar attach`, `ps --json`)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> Numbers:
        """Numbers another process sent (`to_dict`); what it does not say is unknown."""
        if not isinstance(data, dict):
            return cls()
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


class Meter:
    """Folds the open session's events into its `Numbers`: a new session starts from
    nothing; the same session reopened (its agent restarted) keeps them."""

    def __init__(self) -> None:
        self.numbers = Numbers()
        self._session: str | None = None
        self._counted = False  # the running turn's tokens were reported

    def begin_turn(self) -> None:
        """A turn starts: the last turn's tokens stay shown until this one's are reported
        (a turn that ends without them leaves them unknown)."""
        self._counted = False

    def observe(self, event: BaseEvent) -> None:
        """Take one event into account (replayed history counts for nothing)."""
        from avatar.core.events import SessionStarted, TurnFinished, Usage  # (not for a listing)

        if event.replay:
            return
        if isinstance(event, SessionStarted):
            self._opened(event.session_id)
        elif isinstance(event, TurnFinished):
            tokens = self.numbers.turn_tokens if self._counted else None
            self.numbers = replace(self.numbers, turn_tokens=tokens, turns=self.numbers.turns + 1)
        elif isinstance(event, Usage):
            self._used(event)

    def _opened(self, session_id: str) -> None:
        if session_id != self._session:
            self.numbers, self._session = Numbers(), session_id

    def _used(self, usage: Usage) -> None:
        now = self.numbers
        tokens = usage.turn_tokens
        self._counted = self._counted or tokens is not None
        self.numbers = replace(
            now,
            turn_tokens=tokens if tokens is not None else now.turn_tokens,
            context_used=usage.context_used if usage.context_used is not None else now.context_used,
            context_size=usage.context_size or now.context_size,
            cost_usd=usage.cost_usd if usage.cost_usd is not None else now.cost_usd,
        )
