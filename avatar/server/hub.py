"""The hub: every live session of the server (docs/design.md §11), in-process.

The socket server (`avatar.server.serving`) and the web page both drive sessions through this
API only; the `Engine` is the only thing the hub calls, one engine per live session
(`avatar.server.live`: subscribing, prompts queued in order, permission questions answered
from any client, the events). New sessions run on agents kept warm (`avatar.server.warm`).

A REPL lists the session it runs in its own process here too (`avatar.server.hosted`):
`live()` (`avatar ps`) and `attachable()` (`avatar attach`) know both kinds (`Shared`);
`get()` and `sessions()`, which the web page and `chat --resume` drive, only the server's own.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from avatar.bridges.acp.shared import AgentPool
from avatar.core.errors import UsageError
from avatar.server.kept import KeptSessions
from avatar.server.live import LiveSession
from avatar.server.shared import Event, LiveInfo, Shared, State
from avatar.server.warm import WarmAgents

if TYPE_CHECKING:
    from avatar.core.events import BaseEvent
    from avatar.engine.engine import Engine
    from avatar.library.library import Library
    from avatar.library.worktrees import Worktree

__all__ = [
    "Event",
    "Hub",
    "LiveInfo",
    "LiveSession",
    "OpenOptions",
    "Shared",
    "State",
    "build_engine",
]


@dataclass(frozen=True)
class OpenOptions:
    """What a client asks an engine to be built with: the global options and the command's
    own (the same as `avatar`'s flags, docs/design.md §3)."""

    cwd: Path
    provider: str | None = None
    model: str | None = None
    preset: str | None = None
    config: Path | None = None
    trust: bool = False
    permission: str | None = None
    add_dirs: tuple[Path, ...] = ()


def build_engine(options: OpenOptions) -> Engine:
    """The engine `avatar` would build for these options (`Engine.from_config`)."""
    from avatar.engine.engine import Engine

    return Engine.from_config(
        options.cwd,
        provider=options.provider,
        model=options.model,
        preset=options.preset,
        config_file=options.config,
        permission=options.permission,
        add_dirs=options.add_dirs,
        trust=options.trust,
    )


#: Seconds after a session opened when the next warm agent starts, unless its first turn
#: ended before (`LiveSession.after_first_turn`).
REFILL_WITHIN = 2.0


class Hub:
    """Every live session of this server; see the module docstring.

    `make_engine` builds the engine of a new live session from the client's options
    (default: `build_engine`, as the `avatar` command does); `keep_warm`: a new session's
    agent is one started beforehand (`avatar.server.warm`), and another starts for the next.
    """

    def __init__(
        self, make_engine: Callable[[OpenOptions], Engine] = build_engine, *, keep_warm: bool = True
    ) -> None:
        self.make_engine = make_engine
        #: Keep an agent started for the next session of each provider and project.
        self.keep_warm = keep_warm
        self.warm = WarmAgents()
        #: The ACP agents its sessions share (`avatar.bridges.acp.shared`): the next session of
        #: a project opens on the agent that runs.
        self.agents = AgentPool()
        self._live: list[LiveSession] = []
        #: Sessions kept loaded after their last client (`avatar.server.kept`).
        self.kept = KeptSessions(self._close)
        self._hosted: list[Shared] = []  # sessions REPLs run in their own processes
        # Two clients resuming one session share it: their opens of it go one at a time
        # (`_one_open`); opens of other sessions, and new ones, never wait for each other.
        self._opening: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        self._libraries: dict[Path, Engine] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._watching = 0

    async def open(
        self,
        options: OpenOptions,
        *,
        client: str,
        resume: str | None = None,
        continue_last: bool = False,
        session_id: str | None = None,
        source: str | None = None,
        worktree: str | None = None,
        one_shot: bool = False,
        wait: bool = True,
        replay: bool = True,
        answers: bool = False,
        on_events: Callable[[AsyncIterator[Event]], None] | None = None,
        engine: Engine | None = None,
        entered: Callable[[Worktree], None] | None = None,
    ) -> LiveSession:
        """A live session for `client`: the live one `resume` (or `session_id`, or with
        `continue_last` the newest session here) names when one is live, else a session
        opened as `Engine.open` opens it (`worktree`: in a new git worktree, `""` a generated
        name; `one_shot`: a new session that will run one turn, `Engine.one_shot`; `wait`:
        wait for a session another process holds).

        `on_events` receives the client's subscription (`LiveSession.subscribe` with
        `replay` and `answers`) before the session opens, so that the events of opening it
        (`session`, notices) reach the client too; without it the caller subscribes.
        `engine`: one the caller built (its config notices said), instead of `make_engine`;
        `entered`: told the worktree made for the session, before it opens."""
        ref = resume or session_id
        engine = engine or self.make_engine(options)
        engine.agent_pool = self.agents
        if continue_last and not ref:  # the newest session here: it may be live already
            newest = engine.library.sessions(engine.chosen_provider())
            ref = newest[0].id if newest else None
        async with self._one_open(ref):
            live = self.get(ref) if ref else None
            asked = options.provider or engine.requested_provider
            if live is not None and not self.kept.join(live, engine, asked):
                live = None  # (kept, and changed elsewhere since or of another agent: opened anew)
            if live is not None:
                if on_events is not None:
                    on_events(live.subscribe(client, replay=replay, answers=answers))
                return live
            said: list[BaseEvent] = []
            if worktree is None and self.keep_warm:  # (a worktree is a project of its own)
                engine, said = await self.warm.take(engine)
            engine.wait_busy = wait
            engine.one_shot = one_shot
            live = LiveSession(engine, self._forget)
            live.opener = client
            live.started_with(said)
            if on_events is not None:
                on_events(live.subscribe(client, replay=replay, answers=answers))
            try:
                if worktree is not None:
                    made = await engine.enter_worktree(worktree or None)
                    if entered is not None:
                        entered(made)
                await engine.open(
                    resume=resume,
                    continue_last=continue_last,
                    session_id=session_id,
                    source=source,
                )
            except BaseException:
                await live.close()
                self.warm.refill()
                raise
            live.after_first_turn(self.warm.refill, REFILL_WITHIN)
            self._live.append(live)
            return live

    @contextlib.asynccontextmanager
    async def _one_open(self, ref: str | None) -> AsyncIterator[None]:
        """Held while the session `ref` is opened (or joined): one open of it at a time, and
        nothing held for a new session (None). The lock goes when nobody holds or waits."""
        if not ref:
            yield
            return
        lock, users = self._opening.setdefault(ref, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._opening[ref]

    def live(self) -> list[LiveInfo]:
        """Every live session, the server's and those REPLs host, oldest first (`avatar
        ps`); the server's kept without clients too."""
        sessions: list[Shared] = [*self.sessions(), *self._hosted]
        return sorted((s.info() for s in sessions if not s.closed), key=lambda i: i.since)

    def get(self, ref: str) -> LiveSession | None:
        """The server's live session whose id is `ref` or starts with it; None when none is
        live; a UsageError when the prefix names more than one."""
        return _find(self.sessions(), ref)

    def attachable(self, ref: str) -> Shared | None:
        """As `get`, among every live session: the server's and those REPLs host."""
        return _find([*self.sessions(), *(s for s in self._hosted if not s.closed)], ref)

    def adopt(self, hosted: Shared) -> Callable[[], None]:
        """List `hosted`, a session a REPL runs (`avatar.server.hosted`), until the function
        returned is called."""
        self._hosted.append(hosted)
        return lambda: self._hosted.remove(hosted) if hosted in self._hosted else None

    def library(self, cwd: Path, options: OpenOptions | None = None) -> Library:
        """The session library of the project at `cwd` (`Engine.library`), kept between
        calls."""
        root = cwd.resolve()
        engine = self._libraries.get(root)
        if engine is None:
            engine = self.make_engine(options or OpenOptions(cwd=root))
            self._libraries[root] = engine
        return engine.library

    def _forget(self, live: LiveSession, reason: str | None = None) -> None:
        # Its last client left and nothing is queued: kept loaded a while, or closed (at
        # once when it ended for a `reason`: its worker failed, say).
        if reason is None and self.kept.keep(live):
            return
        self._close(live, reason)

    def _close(self, live: LiveSession, reason: str | None = None) -> None:
        self.kept.release(live)
        if live in self._live:
            self._live.remove(live)
        task = asyncio.ensure_future(live.close(reason))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        """Close every live session (their agents stop) and the engines kept for listing."""
        live, self._live = self._live, []
        for session in live:
            self.kept.release(session)
            await session.close("the server stopped")
        for hosted in list(self._hosted):
            await hosted.close("the server stopped")
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
        for engine in self._libraries.values():
            await engine.close()
        self._libraries.clear()
        await self.warm.close()
        await self.agents.close()

    @contextlib.contextmanager
    def watched(self) -> Iterator[None]:
        """While entered, someone watches from outside the socket (a web page's event
        stream): the server is not idle (`serve --idle-exit`)."""
        self._watching += 1
        try:
            yield
        finally:
            self._watching -= 1

    @property
    def watching(self) -> int:
        """How many watch now (`watched()`)."""
        return self._watching

    def sessions(self) -> Sequence[LiveSession]:
        """The live sessions themselves, oldest first (a kept one that a REPL runs now in its
        own process is closed first)."""
        self.kept.sweep(s.session_id for s in self._hosted if not s.closed)
        return [s for s in self._live if not s.closed]


_S = TypeVar("_S", bound=Shared)


def _find(sessions: Sequence[_S], ref: str) -> _S | None:
    exact = [s for s in sessions if s.session_id == ref]
    if exact:
        return exact[0]
    found = [s for s in sessions if ref and s.session_id.startswith(ref)]
    if len(found) > 1:
        ids = ", ".join(s.session_id for s in found)
        raise UsageError(f"session prefix '{ref}' names more than one live session: {ids}")
    return found[0] if found else None
