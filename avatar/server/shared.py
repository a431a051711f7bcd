"""What a session shared by several clients is, to the hub, `avatar ps` and `avatar attach`:
the `Shared` protocol that both kinds of live session satisfy (one the server runs,
`avatar.server.live`; one a REPL runs in its own process and lists with the server,
`avatar.server.hosted`), what `ps` shows of one (`LiveInfo`), and the conversation as the
attach frame carries it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from avatar.policy.permissions import Refusal

if TYPE_CHECKING:
    from avatar.engine.status import EngineStatus
    from avatar.policy.permissions import Answer
    from avatar.sessions.types import Transcript

State = Literal["idle", "turn", "permission"]
Event = dict[str, Any]
#: The types of the hub's own events (`avatar.server.live`'s docstring): not the agent's.
HUB_EVENTS = frozenset(
    {
        "turn_started",
        "turn_ended",
        "permission_asked",
        "permission_answered",
        "switched",
        "cancelled",
        "closed",
    }
)


@dataclass
class LiveInfo:
    """One live session as `avatar ps` shows it."""

    provider: str
    session_id: str
    project: str
    state: State
    model: str | None
    tokens: int | None
    since: float  #: when it went live (epoch seconds)
    clients: list[str]
    queued: int = 0  #: prompts waiting for the running turn
    #: The status line's numbers of the process running the session (`Numbers.to_dict`):
    #: every client shows these, so a client, the REPL and `ps` never disagree.
    numbers: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (`ps --json`)."""
        return dict(self.__dict__)


class Shared(Protocol):
    """A live session as the hub lists it and an attached client drives it."""

    @property
    def session_id(self) -> str:
        """The session's id now (it changes on a provider switch, `/new`, `/resume`)."""

    @property
    def closed(self) -> bool:
        """True once it ended."""

    @property
    def busy(self) -> bool:
        """True while a turn runs or prompts wait."""

    def info(self) -> LiveInfo:
        """What `avatar ps` shows of it."""

    def started(self) -> dict[str, Any] | None:
        """How its session was opened (the `session` event, as a dict); None before."""

    async def join(
        self, client: str, *, answers: bool = True
    ) -> tuple[list[dict[str, Any]], AsyncIterator[Event]]:
        """`client` joins: the conversation so far without the running turn (as
        `conversation_of` gives it) and its events from the running turn's start on (a
        question waiting among them), taken at one moment so that nothing is shown twice or
        missed."""

    async def prompt(self, text: str, client: str, rule: str | None = None) -> Event:
        """Queue `text` as a turn after the others; its `turn_ended` event when it ended
        (`rule`: see `LiveSession.prompt`)."""

    def answer(self, request_id: str, answer: Answer | Refusal, client: str | None) -> bool:
        """Answer the permission question `request_id`; False when it was answered
        already (the first answer wins) or never asked."""

    async def cancel(self, client: str | None = None) -> None:
        """Interrupt the running turn, saying that `client` did."""

    def detach(self, client: str) -> None:
        """`client` leaves; its subscription ends."""

    async def close(self, reason: str | None = None) -> None:
        """End it for every client (the server stops), saying `reason`."""


def error_line(error: BaseException) -> str:
    """An unexpected exception in one line (`internal error: …` follows it): its kind and the
    first line of its message."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def turn_exit(stop: str, failed: bool) -> int:
    """The exit code `chat` gives a turn that stopped with `stop` (its `turn_finished` stop
    reason), after an error event or not (`failed`): 130 cancelled, 1 failed, else 0."""
    return 130 if stop == "cancelled" else 1 if failed or stop == "error" else 0


def turn_started(turn: int, client: str, prompt: str) -> Event:
    """The `turn_started` event: turn number `turn`, `client`'s `prompt`, starting now
    (`at`, the wall clock: a client's turn line times the turn from it, also one it joined
    midway or queued a prompt behind)."""
    at = time.time()
    return {"type": "turn_started", "turn": turn, "client": client, "prompt": prompt, "at": at}


def turn_ended(
    turn: int, client: str, error: str | None, code: int, figures: Event | None = None
) -> Event:
    """The `turn_ended` event (`error`: the one line an AvatarError said, else None), with
    the model and the numbers as the process running the session has them at the turn's end
    (`figures_of`: what every client's status line shows)."""
    ended = {"type": "turn_ended", "turn": turn, "client": client, "error": error, "exit": code}
    return ended | ({"figures": figures} if figures is not None else {})


def figures_of(status: EngineStatus) -> Event:
    """The model and the numbers of an engine's status, as a frame carries them."""
    return {"model": status.model, "numbers": status.numbers.to_dict()}


def answer_of(text: str) -> Answer | Refusal:
    """A permission answer as a client sends it: a word of the menu, else a refusal saying
    what to do instead."""
    if text in ("allow", "always", "deny"):
        return cast("Answer", text)
    return Refusal(text)


def said_of(answer: Answer | Refusal | bool) -> str:
    """A permission answer as a `permission_answered` event carries it (a handler's `True`
    or `False`: allow or deny)."""
    if isinstance(answer, bool):
        return "allow" if answer else "deny"
    return answer if isinstance(answer, str) else f"no: {answer.reason}"


def conversation_of(transcript: Transcript | None, running: str | None) -> list[dict[str, Any]]:
    """The conversation so far as the attach frame carries it (`{role, text, tool_calls}`),
    without the running turn (`running`: its prompt), which the client gets from its start
    with the turn's events, once."""
    if transcript is None:
        return []
    messages = transcript.messages
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    if running is not None and users and running in messages[users[-1]].text:
        messages = messages[: users[-1]]
    return [
        {
            "role": m.role,
            "text": m.text,
            "tool_calls": [{"name": c.name, "id": c.id} for c in m.tool_calls],
        }
        for m in messages
    ]
