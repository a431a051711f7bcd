"""What `/status` and the REPL's status line show: always true of the engine's state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from avatar.engine.numbers import Numbers

if TYPE_CHECKING:
    from avatar.bridges.base import BaseBridge
    from avatar.core.events import SessionStarted
    from avatar.providers.registry import ProviderSpec


@dataclass(frozen=True)
class EngineStatus:
    """The provider (the active one, else the one the next open will use), the model in use,
    the open session, and what the running bridge reports."""

    provider: str | None
    model: str | None  # in use (as the agent names it), else requested; None: unknown
    session_id: str | None
    how: str | None  # new, loaded, resumed, continued, forked
    capabilities: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)  # provider-specific (pid, cost …)
    steers: bool = False  # text sent during a turn joins it (else it waits for the next)
    handoff: str | None = None  # the handoff that will open the next prompt, until it is sent
    numbers: Numbers = field(default_factory=Numbers)  # this turn's tokens, context, cost


def describe(
    spec: ProviderSpec | None,
    requested_model: str | None,
    bridge: BaseBridge | None,
    session: SessionStarted | None,
    handoff: str | None = None,
    sandbox: str | None = None,
    numbers: Numbers | None = None,
) -> EngineStatus:
    """The status of an engine whose chosen provider is `spec` (None when none is usable);
    `sandbox` is what the kernel confines for it (`avatar.policy.sandbox.walls`)."""
    model = (
        (bridge.model_label if bridge else None)
        or requested_model
        or (session.model if session else None)
        or (spec.model if spec is not None and bridge is None else None)
    )
    return EngineStatus(
        provider=spec.name if spec else None,
        model=model,
        session_id=session.session_id if session else None,
        how=session.how if session else None,
        capabilities=bridge.session_capabilities.names() if bridge else [],
        facts={**(bridge.status() if bridge else {}), **({"sandbox": sandbox} if sandbox else {})},
        steers=spec is not None and spec.transport == "native",
        handoff=handoff,
        numbers=numbers or Numbers(),
    )
