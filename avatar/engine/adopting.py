"""Sessions made outside avatar, picked up with `session list --refresh` (an agent's own
`session/list`): avatar has no copy of their turns, so each is loaded once through the agent
and what the agent replays becomes avatar's copy. They are then shown, exported, searched and
handed over like any other; an agent that replays nothing leaves the copy empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from avatar.bridges.base import OpenRequest
from avatar.core.errors import AvatarError

if TYPE_CHECKING:
    from avatar.engine.host import Opener
    from avatar.library.catalog import Catalog
    from avatar.sessions.types import SessionInfo


async def copy_replayed(
    agent: Opener, catalog: Catalog, provider: str, sessions: list[SessionInfo]
) -> int:
    """Load each of `sessions` (new to avatar) on `provider` and keep what the agent replays
    as avatar's copy of its turns; how many got one. A session that does not load is left
    as listed."""
    copied = 0
    for info in sessions:
        try:
            opened = await agent.open_on(provider, OpenRequest.of("resume", info))
        except AvatarError:
            continue
        history = opened.history() if opened.session_id == info.id else None
        if history is not None and history.messages:
            catalog.records().seed(provider, info.id, history.messages)
            copied += 1
    return copied
