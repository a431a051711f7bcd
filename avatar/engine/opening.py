"""Which provider to start and how to open the session, from what the user asked for.

The open policy of docs/design.md §3 in one place: `--resume ID` without a provider finds the
provider that owns the id; with one, an id of another provider's session is a usage error
that names the owner and suggests `--from`; an id no store knows is still handed to the
agent, which may know it. `--continue`, `-s ID` and a provider's `session:` config block
(`resume_id`, `continue_last`) complete the choices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from avatar.bridges.base import OpenRequest
from avatar.core.errors import NotSupportedError, SessionNotFoundError, UsageError
from avatar.core.ids import check_id

if TYPE_CHECKING:
    from avatar.bridges.base import BaseBridge
    from avatar.core.config import Settings
    from avatar.core.events import SessionStarted
    from avatar.library.catalog import Catalog
    from avatar.sessions.types import SessionInfo


@dataclass(frozen=True)
class OpenPlan:
    """The provider to start and the request to open a session on it."""

    provider: str
    request: OpenRequest


def plan_open(
    catalog: Catalog,
    settings: Settings,
    provider: str | None,
    default_provider: Callable[[], str],
    *,
    resume: str | None = None,
    continue_last: bool = False,
    session_id: str | None = None,
) -> OpenPlan:
    """The plan for opening a session; `provider` is a known provider name or None."""
    if resume:
        return _plan_resume(catalog, provider, check_id(resume))
    name = provider or default_provider()
    if not (continue_last or session_id):
        # A provider's `session:` block in config sets how its sessions open by default.
        cfg = settings.provider_config(name)
        defaults = cfg.session if cfg is not None else None
        if defaults is not None and defaults.resume_id:
            return _plan_resume(catalog, name, check_id(defaults.resume_id))
        continue_last = bool(defaults and defaults.continue_last)
    if continue_last:
        return OpenPlan(name, OpenRequest("continue"))
    if session_id:
        return OpenPlan(name, OpenRequest("new", check_id(session_id)))
    return OpenPlan(name, OpenRequest("new"))


def _plan_resume(catalog: Catalog, provider: str | None, ref: str) -> OpenPlan:
    """`ref` is checked already: the stores are asked without checking it again."""
    if provider is None:
        info = catalog.match(ref)
        return OpenPlan(info.provider, _reopen(catalog, info))
    try:
        return OpenPlan(provider, _reopen(catalog, _as(catalog.find(ref, provider), provider)))
    except SessionNotFoundError:
        pass
    try:
        owner = catalog.match(ref)
    except UsageError:
        # No store knows it (or several others do): the agent itself may know the id.
        return OpenPlan(provider, OpenRequest("resume", ref))
    if catalog.shares_store(owner.provider, provider):
        return OpenPlan(provider, OpenRequest.of("resume", _as(owner, provider)))
    raise UsageError(
        f"session {owner.id} belongs to {owner.provider}, not {provider}: resume it with "
        f"-p {owner.provider} (or without -p), or carry it over with "
        f"-p {provider} --from {owner.id}"
    )


def _as(info: SessionInfo, provider: str) -> SessionInfo:
    """The same session as seen through `provider` (claude and claude-acp share a store)."""
    return info if info.provider == provider else replace(info, provider=provider)


def _reopen(catalog: Catalog, info: SessionInfo) -> OpenRequest:
    return OpenRequest.of("resume", info, files_gone=catalog.files_gone(info))


async def open_with(
    bridge: BaseBridge, request: OpenRequest, notice: Callable[[str, str], None]
) -> SessionStarted:
    """Open `request` on the running `bridge`; a reopen the agent does not support opens a
    new session instead, with a notice."""
    try:
        return await bridge.open(request)
    except NotSupportedError as e:
        if request.mode in ("new", "fork"):  # (a new session is no fork: refused)
            raise
        notice(f"{e}; opened a new session instead", "warning")
        return await bridge.open(OpenRequest("new"))
