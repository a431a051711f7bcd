"""What each turn cost, read from avatar's copy of the turns (`records/turns/<provider>/<id>.jsonl`,
docs/design.md §9): the usage an answer's line keeps — its tokens (`tokens`: the count every
screen shows) and its cost (`turn_cost_usd`: what the cost the agent reports grew by during
the turn; `avatar.engine.conversation.LiveTranscript`). For `/cost`.

A line written before these figures were kept, or of an agent that reports none, gives
unknown figures (None), never another kind of figure.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from avatar.core.times import parse_time


@dataclass(frozen=True)
class TurnCost:
    """One turn's figures (None: not known)."""

    provider: str
    session_id: str
    time: datetime | None
    tokens: int | None
    cost_usd: float | None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _turns(path: Path, provider: str) -> Iterator[TurnCost]:
    try:
        data = path.read_bytes()
    except OSError:
        return
    for line in data.splitlines():
        if b'"usage"' not in line:
            continue
        try:
            raw = json.loads(line)
        except ValueError:
            continue  # (a torn line)
        usage = raw.get("usage") if isinstance(raw, dict) else None
        if not isinstance(usage, dict):
            continue
        tokens = _number(usage.get("tokens"))
        yield TurnCost(
            provider,
            path.stem,
            parse_time(raw.get("time")),
            int(tokens) if tokens is not None else None,
            _number(usage.get("turn_cost_usd")),
        )


def turn_costs(
    records: Path, *, since: datetime | None = None, session: tuple[str, str] | None = None
) -> list[TurnCost]:
    """The turns of `session` (provider, id), or of every session with a turn `since` then,
    from the records under `records` (`$AVATAR_HOME/records`)."""
    root = records / "turns"
    if session is not None:
        provider, sid = session
        if "/" in provider + sid or sid.startswith("."):  # (names of files under `root`)
            return []
        return list(_turns(root / provider / f"{sid}.jsonl", provider))
    out: list[TurnCost] = []
    try:
        folders = [p for p in root.iterdir() if p.is_dir()]
    except OSError:
        return out
    stamp = since.timestamp() if since is not None else None
    for folder in folders:
        for path in folder.glob("*.jsonl"):
            try:
                if stamp is not None and path.stat().st_mtime < stamp:
                    continue  # (nothing written since then)
            except OSError:
                continue
            out.extend(
                t
                for t in _turns(path, folder.name)
                if since is None or (t.time is not None and t.time >= since)
            )
    return out


def last_cost(records: Path, provider: str, session_id: str) -> float:
    """The cost the agent last reported for a session (its running count), 0 when none."""
    path = records / "turns" / provider / f"{session_id}.jsonl"
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return 0.0
    for line in reversed(lines):
        if b'"cost_usd"' not in line:
            continue
        try:
            usage = json.loads(line).get("usage")
        except (ValueError, AttributeError):
            continue
        cost = _number(usage.get("cost_usd")) if isinstance(usage, dict) else None
        if cost is not None:
            return cost
    return 0.0
