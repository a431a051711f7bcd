"""Fork at a message (`avatar session fork ID --at N`, REPL `/fork N`; DESIGN §3).

The fork is written to the provider's own store before any agent starts, holding messages
1..N as `session show` numbers them (`SessionStore.fork_at`: the native store and Claude
Code's write one); the engine then opens it like any session. Any other provider is refused
with one line (exit 1: a limit of the provider, not a mistake in the command): no agent
offers a fork at a message (ACP's `session/fork` copies a whole session).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from avatar.bridges.base import OpenRequest
from avatar.core.errors import NotSupportedError, ProviderError, SessionNotFoundError, UsageError

if TYPE_CHECKING:
    from avatar.engine.host import SessionHost
    from avatar.engine.open_session import OpenSession
    from avatar.library.catalog import SessionLibrary
    from avatar.sessions.types import SessionInfo


async def fork_session(engine: SessionHost, ref: str | None, at: int | None) -> OpenSession:
    """`engine.fork()`: fork session `ref` (default: the open one) on its own provider, whole
    (the provider's own fork) or cut after message `at` (written here, then opened)."""
    if ref is not None:
        info = engine.catalog.find(ref)
    elif engine.current is None:
        raise UsageError("no session to fork")
    else:
        name, sid = engine.current.provider, engine.current.session_id
        try:
            info = engine.catalog.find(sid, name)
        except SessionNotFoundError:  # no store has it (yet): the agent knows it
            if at is not None:
                raise ProviderError(
                    f"cannot fork at a message on {name}: no transcript yet"
                ) from None
            return await engine.open_on(name, OpenRequest("fork", sid))
    if at is None:
        return await engine.open_on(info.provider, OpenRequest.of("fork", info))
    cut = fork_at(engine.catalog, info, at)
    return await engine.open_on(cut.provider, OpenRequest.of("resume", cut), how="forked")


def fork_at(library: SessionLibrary, info: SessionInfo, at: int) -> SessionInfo:
    """Write a new session holding messages 1..`at` of `info` and return it as listed; the
    parent's files are not touched."""
    if at < 1:
        raise UsageError("--at counts messages from 1 (as `session show` numbers them)")
    store = library.store(info.provider)
    try:
        if store is None:
            raise NotSupportedError(info.provider, "forking at a message")
        cut = store.fork_at(info, at)
    except NotSupportedError:
        raise ProviderError(f"cannot fork at a message on {info.provider}") from None
    library.link((info.provider, cut.id), (info.provider, info.id), "fork")
    return cut
