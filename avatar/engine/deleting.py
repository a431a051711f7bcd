"""Deleting a session (`avatar session delete`, `session prune`; docs/design.md §3).

Through the agent itself where it can (its own command line without starting it, Gemini CLI's
`--delete-session`; else ACP `session/delete` where advertised), else the provider's store
(Claude Code's and the native files). An agent that can do neither is refused with one line,
nothing deleted: `forget` removes only avatar's record of the session. A session whose files
are gone already is only avatar's record. Once deleted, avatar's record and its copy of the
turns go too (`keep_copy` keeps the copy on disk): nothing lists, shows or searches it again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from avatar.core.errors import NotSupportedError, ProviderError, UsageError

if TYPE_CHECKING:
    from avatar.bridges.base import BaseBridge
    from avatar.engine.open_session import OpenSession
    from avatar.library.catalog import SessionLibrary
    from avatar.library.library import DeleteHow
    from avatar.sessions.types import SessionInfo


class DeleteHost(Protocol):
    """What deleting needs of the engine."""

    @property
    def catalog(self) -> SessionLibrary:
        """The stores and records."""
        ...

    @property
    def current(self) -> OpenSession | None:
        """The open session."""
        ...

    def bridge_for(self, provider: str) -> BaseBridge:
        """A bridge to `provider`, not started."""
        ...

    async def running(self, provider: str) -> BaseBridge:
        """The started bridge to `provider`."""
        ...


async def delete_session(host: DeleteHost, info: SessionInfo, how: DeleteHow) -> SessionInfo:
    """Delete session `info` as `how` says (see the module docstring); returns it."""
    if host.current is not None and host.current.session_id == info.id:
        raise UsageError("cannot delete the session that is open")
    catalog = host.catalog
    if not how.forget and not catalog.files_gone(info):
        await _in_agent(host, info)
    catalog.forget(info, keep_copy=how.keep_copy)
    return info


async def _in_agent(host: DeleteHost, info: SessionInfo) -> None:
    """Delete the session where its provider keeps it; a `ProviderError` when it cannot."""
    spec = host.catalog.registry.spec(info.provider)
    if spec.transport == "acp":
        if await host.bridge_for(info.provider).delete_offline(info):
            return
        if await (await host.running(info.provider)).delete_session(info.id):
            return
    try:
        if host.catalog.keeps_records(info.provider):  # (avatar's record is no delete)
            raise NotSupportedError(info.provider, "deleting a session")
        host.catalog.delete(info)
    except NotSupportedError:
        raise ProviderError(
            f"{info.provider} cannot delete its sessions: nothing was deleted "
            "(--forget removes only avatar's record of it)"
        ) from None
