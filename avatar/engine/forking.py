"""Forking (`avatar session fork ID [--at N | --from-copy]`, REPL `/fork [N]`; docs/design.md §3).

A whole fork is the provider's own (ACP `session/fork`, Claude Code's `--fork-session`, the
native store's). An agent that cannot fork, or did not fork this session, is refused with one
line saying so and naming `--from-copy`, nothing opened, never a new empty session in its
place; with `from_copy`, a new session of the provider is seeded with the whole history
instead: written into the provider's own store where it takes an import, else handed to the
agent as the new session's first turn.

A fork at a message is written to the provider's own store before any agent starts, holding
messages 1..N as `session show` numbers them (`SessionStore.fork_at`: the native store and
Claude Code's write one); any other provider is refused with one line (exit 1: a limit of the
provider, not a mistake in the command).

Every fork is linked to its parent in avatar's records, and avatar's copy of its turns starts
with the whole history it inherited, so `session show`, `--from` and a handoff carry it all.
A fork the agent named after handed-over text is named after its parent instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from avatar.bridges.base import ForkFailedError, OpenRequest
from avatar.core.errors import (
    AvatarError,
    NotSupportedError,
    ProviderError,
    SessionNotFoundError,
    UsageError,
)
from avatar.handoff import build_handoff, seed_prompt, strip_handoff
from avatar.handoff.importing import write_import
from avatar.library.renaming import rename

if TYPE_CHECKING:
    from avatar.engine.host import EngineCore, Opener
    from avatar.engine.open_session import OpenSession
    from avatar.library.catalog import Catalog
    from avatar.sessions.types import SessionInfo, Transcript

Notify = Callable[[str, str], None]


def _quiet(message: str, level: str) -> None:
    pass


#: What to use where an agent cannot fork, or did not.
FROM_COPY = "--from-copy starts a new session seeded with its whole history"
#: What the first turn of a session seeded `--from-copy` asks of the agent.
SEEDED = (
    "This session continues the conversation below, forked from another session. Reply only: ok."
)


async def fork_session(
    engine: EngineCore,
    agent: Opener,
    ref: str | None,
    at: int | None,
    from_copy: bool = False,
    notify: Notify = _quiet,
) -> OpenSession:
    """`engine.agent.fork()`: fork session `ref` (default: the open one) on its own provider, whole
    (the provider's own fork, or with `from_copy` a seeded copy) or cut after message `at`
    (written here, then opened); `notify` hears why a copy stands in for a failed fork."""
    catalog = engine.catalog
    if ref is not None:
        info = catalog.find(ref)
    elif agent.current is None:
        raise UsageError("no session to fork")
    else:
        name, sid = agent.current.provider, agent.current.session_id
        try:
            info = catalog.find(sid, name)
        except SessionNotFoundError:  # no store has it (yet): the agent knows it
            if at is not None:
                raise ProviderError(
                    f"cannot fork at a message on {name}: no transcript yet"
                ) from None
            history = agent.current.history()
            request = OpenRequest("fork", sid)
            return await _whole(engine, agent, request, name, sid, history, from_copy, notify)
    if at is None:
        history = _history(catalog, info)
        request = OpenRequest.of("fork", info)
        return await _whole(
            engine, agent, request, info.provider, info.id, history, from_copy, notify
        )
    cut = fork_at(catalog, info, at)
    return await agent.open_on(cut.provider, OpenRequest.of("resume", cut), how="forked")


def _history(catalog: Catalog, info: SessionInfo) -> Transcript | None:
    try:
        return catalog.transcript(info)
    except AvatarError:
        return None


async def _whole(
    engine: EngineCore,
    agent: Opener,
    request: OpenRequest,
    provider: str,
    parent: str,
    history: Transcript | None,
    from_copy: bool,
    notify: Notify,
) -> OpenSession:
    """The provider's own fork of session `parent`, else (`from_copy`) a seeded copy; its
    lineage and avatar's copy of the inherited history recorded."""
    catalog = engine.catalog
    try:
        started = await agent.open_on(provider, request)
    except (NotSupportedError, ForkFailedError) as e:
        failed = e if isinstance(e, ForkFailedError) else None
        if not from_copy:
            if failed is not None:
                raise ProviderError(f"{failed} ({FROM_COPY})", failed.stderr_tail) from None
            raise ProviderError(
                f"{provider} cannot fork a session: nothing was opened ({FROM_COPY})"
            ) from None
        if history is None or not history.messages:
            raise ProviderError(
                f"cannot fork {provider} session {parent} from a copy: avatar has no copy "
                "of its history"
            ) from None
        if failed is not None:
            notify(f"{failed}; a new session seeded with its history instead", "warning")
        return (await seeded_copy(engine, agent, provider, parent, history))[0]
    _inherit(catalog, provider, started.session_id, parent, history)
    return started


async def seeded_copy(
    engine: EngineCore, agent: Opener, provider: str, parent: str, history: Transcript
) -> tuple[OpenSession, str]:
    """A new `provider` session holding `history`, a copy of session `parent`'s: imported
    into its store (`"imported"`), else handed to the agent in a first turn (`"handed"`)."""
    catalog = engine.catalog
    store = catalog.store(provider)
    try:
        if store is None:
            raise NotSupportedError(provider, "importing a conversation")
        model = engine.models.of(provider)
        written = write_import(store, history, engine.cwd, model, engine.registry.secrets())
    except NotSupportedError:
        written = None
    if written is not None:
        started = await agent.open_on(provider, OpenRequest.of("resume", written), how="forked")
        _inherit(catalog, provider, started.session_id, parent, history)
        return started, "imported"
    started = await agent.open_on(provider, OpenRequest("new"))
    _inherit(catalog, provider, started.session_id, parent, history)
    text = build_handoff(history, cwd=engine.cwd, secrets=engine.registry.secrets())
    async for _ in agent.send(seed_prompt(text, SEEDED)):
        pass  # (the agent now holds the history; its answer is not the user's business)
    return started, "handed"


def _inherit(
    catalog: Catalog, provider: str, child: str, parent: str, history: Transcript | None
) -> None:
    """Fork `child` of `parent`: linked, its copy of the turns starting with `history`, and
    named after its parent where the agent named it after handed-over text."""
    catalog.link((provider, child), (provider, parent), "fork")
    if history is not None:
        catalog.records().seed(provider, child, history.messages)
    _fork_name(catalog, provider, child, parent)


def _fork_name(catalog: Catalog, provider: str, child: str, parent: str) -> None:
    """Claude's fork is named "<its parent's title> (fork)", and a parent opened with a
    handoff and no generated title is titled by its first prompt, handoff and all: such a
    name becomes the parent's name or title (its user's own words) with the fork mark."""
    try:
        fork = catalog.find(child, provider)
    except AvatarError:
        return
    if not fork.name or strip_handoff(fork.name) == fork.name:
        return
    try:
        source = catalog.find(parent, provider)
        label = source.name or source.title
    except AvatarError:
        label = None
    rename(catalog, fork, f"{label or f'{provider} session {parent[:8]}'} (fork)")


def fork_at(catalog: Catalog, info: SessionInfo, at: int) -> SessionInfo:
    """Write a new session holding messages 1..`at` of `info` and return it as listed; the
    parent's files are not touched."""
    if at < 1:
        raise UsageError("--at counts messages from 1 (as `session show` numbers them)")
    store = catalog.store(info.provider)
    try:
        if store is None:
            raise NotSupportedError(info.provider, "forking at a message")
        cut = store.fork_at(info, at)
    except NotSupportedError:
        raise ProviderError(f"cannot fork at a message on {info.provider}") from None
    catalog.link((info.provider, cut.id), (info.provider, info.id), "fork")
    return cut
