"""Deleting a session (`avatar session delete`, `session prune`; docs/design.md §3).

Through the agent itself where it can (its own command line without starting it, Gemini CLI's
`--delete-session`; else ACP `session/delete` where advertised), else the provider's store
(Claude Code's, codex's and the native files). An agent whose `session/delete` only archives
(quirk `delete_archives`: codex-acp moves the rollout to `archived_sessions/`, and `codex
unarchive` brings it back) is not asked: its store deletes. An agent that can do neither is
refused with one line, nothing deleted. A session whose files are gone already is only
avatar's record. Once deleted, avatar's record and its copy of the turns go too (`keep_copy`
keeps the copy on disk): nothing lists, shows or searches it again.

`forget` removes only avatar's record (and copy) of a session, never asking the agent; it is
refused where it would change nothing anyone sees (the session is listed from its provider's
own files, and the provider can delete it: `session delete` is the way), and otherwise says
what went and where the session still lives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from avatar.core.errors import NotSupportedError, ProviderError, UsageError
from avatar.library.library import Deleted

if TYPE_CHECKING:
    from avatar.bridges.base import BaseBridge
    from avatar.engine.open_session import OpenSession
    from avatar.library.catalog import Catalog
    from avatar.library.library import DeleteHow
    from avatar.sessions.types import SessionInfo

#: The quirk of an agent whose `session/delete` archives the session instead.
DELETE_ARCHIVES = "delete_archives"


class DeleteHost(Protocol):
    """What deleting needs of the engine's agent (`avatar.engine.agent.Agent` is one)."""

    @property
    def current(self) -> OpenSession | None:
        """The open session."""
        ...

    def bridge_for(self, provider: str) -> BaseBridge:
        """A bridge to `provider`, not started."""
        ...

    async def start(self, provider: str) -> BaseBridge:
        """The bridge to `provider`, started unless it runs."""
        ...


async def delete_session(
    agent: DeleteHost, catalog: Catalog, info: SessionInfo, how: DeleteHow
) -> Deleted:
    """Delete session `info` as `how` says (see the module docstring); what was done."""
    if agent.current is not None and agent.current.session_id == info.id:
        raise UsageError("cannot delete the session that is open")
    if how.forget:
        note = _forgotten(catalog, info, how.keep_copy)
        catalog.forget(info, keep_copy=how.keep_copy)
        return Deleted(info, "forgot", note)
    if not catalog.files_gone(info):
        await _in_agent(agent, catalog, info)
    catalog.forget(info, keep_copy=how.keep_copy)
    return Deleted(info, "deleted")


def _forgotten(catalog: Catalog, info: SessionInfo, keep_copy: bool) -> str:
    """What forgetting `info` removes and where the session still lives, one phrase; a
    `UsageError` where forgetting would change nothing anyone sees."""
    name = info.provider
    what = "avatar's record" + ("" if keep_copy else " and copy of its turns")
    if catalog.files_gone(info):
        return f"{what} went; {name}'s own files of it were gone already"
    if catalog.keeps_records(name):
        return (
            f"{what} went, so avatar lists it no more; {name} may still hold it in its own "
            f"store (`avatar -p {name} chat --resume {info.id}` would ask it)"
        )
    where = info.path or f"{name}'s own store"
    if _can_delete(catalog, name):
        raise UsageError(
            f"--forget would change nothing: {name} session {info.id} is listed from "
            f"{name}'s own files ({where}); `avatar session delete {info.id}` deletes it there"
        )
    return f"{what} went (its name and links); the session itself still lives in {where}"


def _can_delete(catalog: Catalog, provider: str) -> bool:
    """`provider` deletes its sessions without avatar asking a running agent: its store
    does, or its own command line (`cli_delete`)."""
    from avatar.bridges.acp.own_cli import CLI_DELETE

    store = catalog.store(provider)
    spec = catalog.registry.spec(provider)
    return (store is not None and store.deletes) or CLI_DELETE in spec.quirks


async def _in_agent(agent: DeleteHost, catalog: Catalog, info: SessionInfo) -> None:
    """Delete the session where its provider keeps it; a `ProviderError` when it cannot."""
    spec = catalog.registry.spec(info.provider)
    if spec.transport == "acp" and DELETE_ARCHIVES not in spec.quirks:
        if await agent.bridge_for(info.provider).delete_offline(info):
            return
        if await (await agent.start(info.provider)).delete_session(info.id):
            return
    try:
        if catalog.keeps_records(info.provider):  # (avatar's record is no delete)
            raise NotSupportedError(info.provider, "deleting a session")
        catalog.delete(info)
    except NotSupportedError:
        raise ProviderError(
            f"{info.provider} cannot delete its sessions: nothing was deleted "
            "(--forget removes only avatar's record of it)"
        ) from None
