"""`/cost`: the tokens and cost of the open session and of today, per provider, from avatar's
records of each turn (`Library.turn_costs`): every session avatar ran today counts, in any
directory and any process. A figure an agent did not report is unknown (`?`), and a sum
that misses some turns' figures says so (`+?`): never another kind of figure in its place.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from avatar.cli.repl.host import ReplHost


class _Turn(Protocol):
    """A turn's figures (`avatar.sessions.spending.TurnCost`)."""

    @property
    def provider(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def tokens(self) -> int | None: ...
    @property
    def cost_usd(self) -> float | None: ...


def _tokens(turns: list[_Turn]) -> str:
    known = [t.tokens for t in turns if t.tokens is not None]
    if not known:
        return "?"
    return f"{sum(known):,}" + ("+?" if len(known) < len(turns) else "")


def _cost(turns: list[_Turn]) -> str:
    known = [t.cost_usd for t in turns if t.cost_usd is not None]
    if not known:
        return "$?"
    return f"${sum(known):.4f}" + ("+?" if len(known) < len(turns) else "")


def _row(name: str, turns: list[_Turn]) -> list[str]:
    sessions = len({(t.provider, t.session_id) for t in turns})
    return [name, str(sessions), str(len(turns)), _tokens(turns), _cost(turns)]


def report(session: tuple[str, str] | None, mine: list[_Turn], today: Iterable[_Turn]) -> str:
    """The `/cost` text: the open `session` (provider, id) and its turns, then today's turns
    per provider."""
    from avatar.cli.output.table import render_table

    lines = []
    if session is not None:
        provider, sid = session
        said = f"{len(mine)} turn{'s' if len(mine) != 1 else ''}"
        lines.append(
            f"this session ({provider} {sid[:12]}): {said} · {_tokens(mine)} tokens · {_cost(mine)}"
        )
    else:
        lines.append("this session: none open yet")
    by_provider: dict[str, list[_Turn]] = {}
    for turn in today:
        by_provider.setdefault(turn.provider, []).append(turn)
    if not by_provider:
        lines.append("today: no turns in avatar's records")
        return "\n".join(lines)
    rows = [_row(name, by_provider[name]) for name in sorted(by_provider)]
    if len(rows) > 1:
        rows.append(_row("all", [t for name in sorted(by_provider) for t in by_provider[name]]))
    lines.append("today, from avatar's records:")
    table = render_table(["provider", "sessions", "turns", "tokens", "cost"], rows)
    lines.extend("  " + line for line in table.rstrip("\n").splitlines())
    return "\n".join(lines)


async def show_cost(repl: ReplHost, args: list[str]) -> bool:
    """The `/cost` command."""
    if args:
        repl.say("usage: /cost (this session and today, per provider)")
        return False
    library = repl.engine.library
    status = repl.engine.status()
    session = (
        (status.provider, status.session_id) if status.provider and status.session_id else None
    )
    mine: list[_Turn] = list(library.turn_costs(session=session)) if session else []
    midnight = datetime.now().astimezone().replace(hour=0, minute=0, second=0, microsecond=0)
    repl.say(report(session, mine, library.turn_costs(since=midnight)))
    return False
