"""The contract every bridge fulfils — what it is asked to open (`OpenRequest`), what it gets
from the engine (`BridgeContext`), what it can do (`SessionCapabilities`) — with safe defaults
for what a provider cannot do."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from avatar.core.errors import NotSupportedError, ProviderError
from avatar.policy.permissions import PermissionHandler, deny_all
from avatar.providers.capabilities import SessionCapabilities

if TYPE_CHECKING:
    from avatar.bridges.acp.launch import Ahead
    from avatar.bridges.acp.shared import AgentPool
    from avatar.bridges.claude.launch import ClaudeAhead
    from avatar.bridges.held_back import Holding
    from avatar.core.config import Settings
    from avatar.core.events import BaseEvent, SessionStarted
    from avatar.core.prompts import Prompt
    from avatar.providers.registry import ProviderSpec
    from avatar.sessions.store import SessionStore
    from avatar.sessions.types import SessionInfo


OpenMode = Literal["new", "resume", "continue", "fork"]


@dataclass(frozen=True)
class OpenRequest:
    """How to open a session: a new one (optionally with a chosen id), or an existing one.

    For `resume` and `fork` the engine has already resolved the session: `info` is the one
    the provider's store listed (or None when the store does not know the id and the agent
    is asked anyway); bridges use it and never look the session up again.
    """

    mode: OpenMode = "new"
    session_id: str | None = None
    info: SessionInfo | None = None
    #: The provider's own files of the session are gone; avatar has only its copy of the
    #: turns. An agent may still claim to reopen it (codex-acp does, then fails every
    #: prompt), so bridges open a new session, which the engine seeds from the copy.
    files_gone: bool = False

    @classmethod
    def of(cls, mode: OpenMode, info: SessionInfo, files_gone: bool = False) -> OpenRequest:
        """A request to reopen (or fork) a session the engine has resolved."""
        return cls(mode, info.id, info, files_gone)

    def opened(self, provider: str, session_id: str) -> SessionInfo | None:
        """The session the engine resolved, as `provider` opened it, when session `session_id`
        is it (an agent may open another instead) and its files are there: what the open
        session's conversation is read from, without looking it up again."""
        info = self.info
        if info is None or info.id != session_id or self.files_gone:
            return None
        return info if info.provider == provider else replace(info, provider=provider)


EventSink = Callable[["BaseEvent"], None]
"""Receives events produced outside a turn (notices while opening, replay, agent death)."""


def _nothing() -> None:
    pass


def _drop(event: BaseEvent) -> None:
    return None


@dataclass
class BridgeContext:
    """Everything a bridge needs from the engine; plain data, built once per bridge."""

    spec: ProviderSpec
    cwd: Path
    settings: Settings
    avatar_home: Path
    env: Mapping[str, str] = field(default_factory=dict)  # full env for child processes
    additional_dirs: list[Path] = field(default_factory=list)  # `--add-dir`, resolved
    #: The engine's reader of this provider's store: a bridge never builds a second one.
    store: SessionStore | None = None
    model: str | None = None
    system_prompt: str | None = None
    #: Asked before any action that changes something (`allows` reads the answer).
    permission: PermissionHandler = deny_all
    emit: EventSink = _drop
    #: A session another process holds: wait for it (True) or fail at once (`--no-wait`).
    wait_busy: bool = True
    #: Called once the agent's process is spawned, while it boots: the engine makes there
    #: what the session needs first (a cold one-shot waits for neither then).
    booting: Callable[[], object] = _nothing
    #: The agent the engine started ahead of the event loop, for a one-shot's bridge to
    #: adopt (`Engine.launch_ahead`): an ACP agent, or claude on a new session of its own;
    #: None: the bridge starts its own.
    ahead: Ahead | ClaudeAhead | None = None
    #: Running agents this bridge may open its session on, and leaves its own agent to, for
    #: the sessions of other bridges (the server's: `avatar.bridges.acp.shared`); None: the
    #: bridge's agent is its own.
    pool: AgentPool | None = None
    #: `--trust`: the project's files are trusted for this run (its agent config included).
    trust: bool = False

    def holding(self, cwd: Path) -> Holding:
        """What of the project's own config the agent starting in `cwd` starts without, and
        how (`avatar.bridges.held_back`)."""
        from avatar.bridges.held_back import holding

        return holding(self.spec, cwd, self.avatar_home, self.env, trusted_run=self.trust)


_OPENING: dict[OpenMode, str] = {
    "new": "opening a session",
    "resume": "resuming a session",
    "continue": "continuing the last session",
    "fork": "forking a session",
}


class ForkFailedError(ProviderError):
    """An agent that forks sessions did not fork this one (its answer is in the message):
    nothing was opened in its place, and a copy of the history may stand in for it
    (`session fork --from-copy`)."""


def not_supported(provider: str, mode: OpenMode) -> NotSupportedError:
    """The error for a way of opening a session that `provider` does not support (the engine
    then opens a new session instead, with a notice)."""
    return NotSupportedError(provider, _OPENING[mode])


class BaseBridge(ABC):
    """One provider behind avatar's session API.

    Subclasses implement `open` and `send`; every other operation defaults to doing nothing
    or to a typed `NotSupportedError` naming the provider, so the engine can fall back and
    the user sees a clear message instead of a traceback.
    """

    def __init__(self, ctx: BridgeContext) -> None:
        self.ctx = ctx
        self.session_id: str | None = None
        self.capabilities = SessionCapabilities()

    @property
    def name(self) -> str:
        """The provider name this bridge serves."""
        return self.ctx.spec.name

    @property
    def session_capabilities(self) -> SessionCapabilities:
        """Capabilities as detected after `start()`."""
        return self.capabilities

    async def start(self) -> None:
        """Spawn or connect to the agent and detect capabilities."""

    async def stop(self) -> None:
        """Shut the agent down cleanly; safe to call twice."""

    async def warm_up(self) -> None:
        """Pay, on a started agent kept for a later session, what its first session costs
        beyond the start where that leaves no trace (a server's warm agents); by default
        nothing."""

    @abstractmethod
    async def open(self, request: OpenRequest) -> SessionStarted:
        """Open a session as `request` asks: a new one, or the session the engine resolved
        to resume, continue or fork; a way of opening the provider cannot do raises
        `not_supported(name, mode)`."""

    @abstractmethod
    def send(self, prompt: str | Prompt) -> AsyncIterator[BaseEvent]:
        """Run one turn; yields events and ends after `TurnFinished` (or `Error`). Its
        images are only ever given to a bridge whose `takes_images` is True."""

    @property
    def takes_images(self) -> bool:
        """True when the agent accepts images in a prompt (ACP agents say so at initialize)."""
        return False

    async def cancel(self) -> None:
        """Stop the running turn; the turn then ends with stop reason `cancelled`."""

    async def steer(self, text: str) -> bool:
        """Inject text into the running turn; False when the provider cannot (caller queues)."""
        return False

    @property
    def can_plan(self) -> bool:
        """True when the agent has a plan mode (it reads and plans, and changes nothing)."""
        return False

    async def set_plan(self, on: bool) -> None:
        """Plan mode on or off from the next turn."""
        raise NotSupportedError(self.name, "plan mode")

    async def set_model(self, model: str) -> None:
        """Switch model for the next turn."""
        raise NotSupportedError(self.name, "switching the model")

    async def agent_sessions(self) -> list[SessionInfo] | None:
        """The sessions the running agent itself lists for the cwd; None when it cannot list
        (most providers are listed from their files instead)."""
        return None

    async def delete_session(self, session_id: str) -> bool:
        """Delete a session through the running agent; False when it offers no way to."""
        return False

    async def delete_offline(self, info: SessionInfo) -> bool:
        """Delete session `info` through the agent's own command line, without starting
        the agent; False when it has no such command."""
        return False

    async def compact(self) -> str:
        """Compact the session's context now; returns a one-line summary of what it did."""
        raise NotSupportedError(self.name, "compacting the context")

    @property
    def alive(self) -> bool:
        """False once the agent behind the bridge has died (the engine then restarts it and
        reopens the session before the next turn)."""
        return True

    @property
    def model_in_use(self) -> str | None:
        """The model the session actually runs on, when the bridge knows it."""
        return self.ctx.model

    @property
    def model_label(self) -> str | None:
        """The model in use as the status line names it: `model_in_use`, explained where the
        agent's id stands for another model (claude-acp's `default`)."""
        return self.model_in_use

    def status(self) -> dict[str, Any]:
        """Provider-specific status facts for `/status` (plain strings and numbers)."""
        return {}
