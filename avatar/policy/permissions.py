"""The permission policy (docs/design.md §3): one gate every bridge's requests pass through.

`permission: allow | deny` answers by itself. `ask` hands the request to the caller's
handler (the REPL's menu, an embedder's callback), which answers allow once, allow always
for this session, deny, or deny with a reason (`Refusal`: "no, use tabs"), which reaches the
agent (as the tool's result where the agent's protocol carries one, else with the next
prompt); "always" is remembered per session and per kind of action, so
the same kind of request is not asked again. Where nobody can answer (`chat`), `ask` denies
and says which flag allows such actions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from avatar.core.events import BaseEvent, PermissionRequested

__all__ = [
    "Answer",
    "PermissionGate",
    "PermissionHandler",
    "Refusal",
    "allows",
    "deny_all",
    "reason_of",
    "unanswered",
]

Answer = Literal["allow", "always", "deny"]
"""What a permission handler answers: allow once, allow for the rest of the session, deny."""


@dataclass(frozen=True)
class Refusal:
    """A deny with the user's words for the agent: "no, and do this instead"."""

    reason: str

    def message(self) -> str:
        """The refusal as the agent reads it."""
        return f"The user refused this action and said: {self.reason}"


PermissionHandler = Callable[["PermissionRequested"], Awaitable["Answer | Refusal | bool"]]
"""Answers a permission request; `True`/`False` are read as allow once / deny (`allows`), a
`Refusal` as a deny whose reason the agent reads (`reason_of`).

The one handler type: the caller's (asked when the policy is `ask`) and the one every bridge
and the native agent ask (`BridgeContext.permission`, the engine's `PermissionGate.decide`)."""


def allows(answer: Answer | Refusal | bool) -> bool:
    """True when a handler's answer allows the action (allow once or for the session)."""
    return not isinstance(answer, Refusal) and answer in ("allow", "always", True)


def reason_of(answer: Answer | Refusal | bool) -> str | None:
    """What the agent should read about a denial: the user's words, when they gave some."""
    return answer.message() if isinstance(answer, Refusal) else None


def unanswered(title: str) -> str:
    """What is said of a request denied because nobody can answer it (`ask` in `chat`)."""
    return (
        f"denied {title!r}: nobody can answer a permission prompt here; "
        "use --permission allow to allow such actions"
    )


async def deny_all(request: PermissionRequested) -> Answer | Refusal | bool:
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

    async def decide(self, request: PermissionRequested) -> bool | Refusal:
        """Answer one request; sets `request.decision` (and `reason`) and returns True to allow,
        False to deny, or the handler's `Refusal` (a deny with the user's words)."""
        key = (self.session_id, request.kind or request.title)
        if self.policy == "allow" or key in self._always:
            allowed = True
        elif self.policy == "ask" and self.handler is not None:
            answer = await self.handler(request)
            if answer == "always":
                self._always.add(key)
            if isinstance(answer, Refusal):
                request.decision, request.reason = "deny", answer.reason
                return answer
            allowed = allows(answer)
        else:
            allowed = False
            if self.policy == "ask":
                from avatar.core.events import Notice

                self._emit(Notice(message=unanswered(request.title), level="warning"))
        request.decision = "allow" if allowed else "deny"
        return allowed
