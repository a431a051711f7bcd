"""The permission policy (DESIGN §3): one gate every bridge's requests pass through.

`permission: allow | deny` answers by itself. `ask` hands the request to the caller's
handler (the REPL's menu, an embedder's callback), which answers allow once, allow always
for this session, or deny; "always" is remembered per session and per kind of action, so
the same kind of request is not asked again. Where nobody can answer (`chat`), `ask` denies
and says which flag allows such actions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from avatar.core.events import BaseEvent, PermissionRequested

__all__ = ["Answer", "PermissionGate", "PermissionHandler", "allows", "deny_all"]

Answer = Literal["allow", "always", "deny"]
"""What a permission handler answers: allow once, allow for the rest of the session, deny."""

PermissionHandler = Callable[["PermissionRequested"], Awaitable["Answer | bool"]]
"""Answers a permission request; `True`/`False` are read as allow once / deny (`allows`).

The one handler type: the caller's (asked when the policy is `ask`) and the one every bridge
and the native agent ask (`BridgeContext.permission`, the engine's `PermissionGate.decide`)."""


def allows(answer: Answer | bool) -> bool:
    """True when a handler's answer allows the action (allow once or for the session)."""
    return answer in ("allow", "always", True)


async def deny_all(request: PermissionRequested) -> Answer | bool:
    """The handler used where nobody configured one: every request is denied."""
    return False


class PermissionGate:
    """Decides permission requests for one engine."""

    def __init__(self, emit: Callable[[BaseEvent], None], policy: str = "ask") -> None:
        self.policy = policy  # allow, deny or ask (then the handler answers)
        self.handler: PermissionHandler | None = None
        self._emit = emit
        self._always: set[tuple[str, str]] = set()  # (session id, kind) allowed for good
        self.session_id: str = ""

    def allowed_for_session(self) -> list[str]:
        """The kinds of action the user allowed for the rest of the open session."""
        return sorted(kind for sid, kind in self._always if sid == self.session_id)

    def forget(self) -> None:
        """Drop every "always" answer (a new session starts asking again)."""
        self._always.clear()

    async def decide(self, request: PermissionRequested) -> bool:
        """Answer one request; sets `request.decision` and returns True to allow."""
        key = (self.session_id, request.kind or request.title)
        if self.policy == "allow" or key in self._always:
            allowed = True
        elif self.policy == "ask" and self.handler is not None:
            answer = await self.handler(request)
            if answer == "always":
                self._always.add(key)
            allowed = allows(answer)
        else:
            allowed = False
            if self.policy == "ask":
                from avatar.core.events import Notice

                self._emit(
                    Notice(
                        message=f"denied {request.title!r}: nobody can answer a permission "
                        "prompt here; use --permission allow to allow such actions",
                        level="warning",
                    )
                )
        request.decision = "allow" if allowed else "deny"
        return allowed
