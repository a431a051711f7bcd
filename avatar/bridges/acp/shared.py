"""One running ACP agent with the sessions of several bridges on it (docs/design.md §11).

An ACP connection carries any number of sessions, and every call of the agent's names the
session it is about. A `SharedAgent` is one agent process and its connection; each bridge with
sessions on it gives its `AgentCalls` (where that session's updates go, who decides its
permission questions, the scope of its files and its terminals), and `Routes` hands each call
of the agent to the bridge whose session it names (a session being opened, whose id the agent
has yet to say, to the one bridge opening a session now: opens on one agent take turns).

Every ACP bridge runs on one (alone on it, unless it was given an `AgentPool`). The server gives
its engines one pool: a bridge started with the same launch as an agent of the pool runs its
session on that agent instead of starting another (where the provider has the
`shared_process` quirk), so the next session of a project costs a `session/new`, not an
agent's start. A bridge that leaves closes its own session (`session/close`, where the agent
offers it).

The pool runs up to `AGENTS_PER_KEY` agents of one launch, and a session opens on one that
no bridge uses when there is one: an agent does one thing at a time (Gemini's `session/new`
is ~25 ms of its one thread), and the server prepares the next session while the current one
runs, so the two go to two agents and neither waits for the other. An agent of the pool that
its last bridge left is parked for the next session, and ends once unused for
`PARKED_KEPT` seconds or with the pool; one outside a pool ends with its last bridge.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from avatar.bridges.acp.jsonrpc import INVALID_PARAMS, RpcError
from avatar.providers.variables import agent_environment

if TYPE_CHECKING:
    from avatar.bridges.acp.connection import AgentConnection
    from avatar.bridges.acp.launch import AgentLaunch
    from avatar.core.events import BaseEvent

#: The quirk of an agent that keeps several sessions in one process as ACP allows.
SHARED_PROCESS = "shared_process"
#: Sessions opened on one agent before the pool starts another for the next: an agent may keep
#: what a session held even after `session/close`, and one without it keeps all of it.
MOST_SESSIONS = 200
MOST_SESSIONS_UNCLOSED = 32
#: Agents of one launch a pool runs at most (see the module docstring).
AGENTS_PER_KEY = 2
#: Seconds an agent of a pool that no bridge uses is kept for the next session.
PARKED_KEPT = 600.0


class AgentCalls(Protocol):
    """What a bridge answers the agent's calls about its sessions with
    (`avatar.bridges.acp.client.AgentCalls`: its updates' router, its permission questions,
    the scope of its files, its terminals)."""

    def notification(self, method: str, params: dict[str, Any]) -> None:
        """A notification of the agent's about a session of the bridge."""

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """The answer to a request of the agent's about a session of the bridge."""


class Routes:
    """Which bridge's `AgentCalls` answers for which session of one agent: the connection's
    request and notification handlers."""

    def __init__(self) -> None:
        self._sessions: dict[str, AgentCalls] = {}
        #: The calls of the bridge opening a session now (its id not said yet, or said first
        #: in the updates before the answer).
        self.opening: AgentCalls | None = None

    def of(self, session_id: object) -> AgentCalls | None:
        """The calls of `session_id`; an unknown id (or none) is the session being opened."""
        found = self._sessions.get(session_id) if isinstance(session_id, str) else None
        return found or self.opening

    def add(self, session_id: str, calls: AgentCalls) -> None:
        """Calls about `session_id` go to `calls` from now on."""
        self._sessions[session_id] = calls

    def drop(self, calls: AgentCalls) -> None:
        """Forget every session of `calls`."""
        for session_id in [s for s, r in self._sessions.items() if r is calls]:
            del self._sessions[session_id]

    def notification(self, method: str, params: dict[str, Any]) -> None:
        """A notification of the agent's, to the bridge of the session it names; one about
        no session of ours is dropped (a late update of a session left behind)."""
        calls = self.of(params.get("sessionId"))
        if calls is not None:
            calls.notification(method, params)

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """A request of the agent's, answered by the bridge of the session it names; one
        about no session of ours is refused (invalid params)."""
        session_id = params.get("sessionId")
        calls = self.of(session_id)
        if calls is None:
            raise RpcError(INVALID_PARAMS, f"no session {session_id} here")
        return await calls.request(method, params)


class User(Protocol):
    """What a `SharedAgent` asks of a bridge with sessions on it."""

    def agent_exited(self) -> bool:
        """The agent ended on its own: True when a running turn of the bridge took the news."""

    def said(self, event: BaseEvent) -> None:
        """An event outside a turn (the agent's death when no turn took it)."""


class SharedAgent:
    """One running ACP agent and the bridges with sessions on it; see the module docstring.

    `agent` is set once the agent runs (`ready()` waits for it); `key` is its launch's
    (`launch_key`)."""

    def __init__(self, key: str, pool: AgentPool | None = None) -> None:
        self.key = key
        self.routes = Routes()
        self.agent: AgentConnection | None = None
        self.users: list[User] = []
        self.opened = 0  #: sessions opened on it
        self._pool = pool
        self._turns = asyncio.Lock()
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.parked: asyncio.TimerHandle | None = None  # (unused, in its pool: its expiry)
        self.picked = 0  # (when its pool last gave it a session: the least recent goes next)

    @property
    def alive(self) -> bool:
        """The agent runs and its connection is open."""
        return self.agent is not None and self.agent.alive

    def started(self, agent: AgentConnection | None) -> None:
        """The agent runs (`agent`), or could not start (None: the pool forgets it)."""
        self.agent = agent
        if agent is None and self._pool is not None:
            self._pool.forget(self)
        if not self._ready.done():
            self._ready.set_result(None)

    async def ready(self) -> bool:
        """Wait for the agent's start; True when it runs and takes another session."""
        await asyncio.shield(self._ready)
        agent = self.agent
        if agent is None or not agent.alive:
            return False
        return self.opened < (MOST_SESSIONS if agent.can_close() else MOST_SESSIONS_UNCLOSED)

    def join(self, user: User) -> None:
        """`user` runs sessions on this agent until it `leave`s."""
        self.users.append(user)

    @contextlib.asynccontextmanager
    async def opening(self, calls: AgentCalls) -> AsyncIterator[None]:
        """While a session is opened for `calls`: alone on this agent (see `Routes.opening`)."""
        async with self._turns:
            self.routes.opening = calls
            try:
                yield
            finally:
                self.routes.opening = None

    def opened_for(self, session_id: str, calls: AgentCalls) -> None:
        """Session `session_id` was opened for `calls`."""
        self.routes.add(session_id, calls)
        self.opened += 1

    async def leave(self, user: User, calls: AgentCalls | None, sessions: list[str]) -> bool:
        """`user` leaves with its `sessions`: closed where the agent offers `session/close`,
        or the agent ends with them when `user` was its last. True when it ended."""
        if user in self.users:
            self.users.remove(user)
        if calls is not None:
            self.routes.drop(calls)
        agent = self.agent
        if agent is None:
            return True
        if self.users or (self._pool is not None and self._pool.park(self)):
            if agent.can_close() and agent.alive:
                for session_id in sessions:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(agent.conn.close_session(session_id), 2.0)
            return False
        if self._pool is not None:
            self._pool.forget(self)
        await agent.close(sessions[0] if sessions else None)
        return True

    def unpark(self) -> None:
        """Taken for a session: no longer parked."""
        if self.parked is not None:
            self.parked.cancel()
            self.parked = None

    # -- what the connection tells every bridge on it -------------------------------------------

    def exited(self) -> bool:
        """`AgentConnection`'s exit handler: every bridge on it hears of the death."""
        took = [user.agent_exited() for user in list(self.users)]
        return any(took)

    def emit(self, event: BaseEvent) -> None:
        """`AgentConnection`'s event sink: every bridge on it gets the event."""
        for user in list(self.users):
            user.said(event)


def launch_key(launch: AgentLaunch) -> str:
    """What an agent is started with, as far as it changes the agent: its command, the
    variables of its environment that change it (`avatar.providers.variables`), its
    project, the walls' scope and what of the project's config it is started without. Two
    bridges whose launches have one key can run on one agent (a digest: no value kept)."""
    spec, policy = launch.spec, launch.files.policy
    env = sorted(agent_environment(spec, launch.agent_env()).items())
    holding = launch.holding
    scope = (
        policy.read_patterns,
        policy.write_patterns,
        policy.deny_patterns,
        policy.allow_protected,
        policy.sandbox_mode,
        policy.read_outside,
        policy.sockets,
        policy.network,
    )
    facts = (
        spec.name,
        launch.argv,
        env,
        str(policy.root),
        [str(d) for d in policy.extra_roots],
        scope,
        launch.walled,
        launch.mode,
        repr(holding.meta),
        repr(holding.covered),
    )
    return hashlib.sha256(repr(facts).encode()).hexdigest()


async def run_on(
    pool: AgentPool | None,
    launch: AgentLaunch,
    user: User,
    start: Callable[[SharedAgent], Awaitable[AgentConnection]],
) -> SharedAgent:
    """The agent `user` runs its sessions on: `pool`'s agent of `launch`'s key where the
    provider shares its process, else one `start(agent)` starts (`user` hears from it
    already while it starts); a start that fails leaves nothing behind."""
    if pool is not None and SHARED_PROCESS in launch.spec.quirks:
        shared, starting = await pool.agent_for(launch_key(launch))
    else:
        shared, starting = SharedAgent(""), True
    shared.join(user)
    if starting:
        try:
            agent = await start(shared)
        except BaseException:
            shared.users.remove(user)
            shared.started(None)
            raise
        shared.started(agent)
    return shared


class AgentPool:
    """Running ACP agents that the bridges given this pool share, up to `per_key` per launch
    key, parked `parked_kept` seconds once unused (see the module docstring)."""

    def __init__(self, per_key: int = AGENTS_PER_KEY, parked_kept: float = PARKED_KEPT) -> None:
        self.per_key, self.parked_kept = per_key, parked_kept
        self._agents: dict[str, list[SharedAgent]] = {}
        self._ending: set[asyncio.Task[None]] = set()
        self._picks = 0

    async def agent_for(self, key: str) -> tuple[SharedAgent, bool]:
        """The agent of `key` to run a session on, and whether it must be started (then the
        caller starts it and says so: `SharedAgent.started`): one no bridge uses, else a new
        one while there are fewer than `per_key`, else the one with the fewest bridges; of
        equals, the one given a session least recently (the other one's session is the one
        about to run). One being started by another bridge is waited for."""
        while True:
            agents = self._agents.get(key, [])
            unused = [a for a in agents if not a.users]
            if not unused and len(agents) < self.per_key:
                break
            found = min(unused or agents, key=lambda a: (len(a.users), a.picked))
            if await found.ready():
                found.unpark()
                self._picks += 1
                found.picked = self._picks
                return found, False
            self.forget(found)  # dead or full: another takes its place
            if not found.users:
                self._end(found)
        made = SharedAgent(key, self)
        self._picks += 1
        made.picked = self._picks
        self._agents.setdefault(key, []).append(made)
        return made, True

    def park(self, agent: SharedAgent) -> bool:
        """Keep `agent`, which its last bridge left, for the next session; False when it is
        not kept (not this pool's any more, or dead): it ends now."""
        if agent not in self._agents.get(agent.key, []) or not agent.alive:
            return False
        if self.parked_kept > 0:
            agent.unpark()
            agent.parked = asyncio.get_running_loop().call_later(
                self.parked_kept, self._expire, agent
            )
        return True

    def _expire(self, agent: SharedAgent) -> None:
        agent.parked = None
        if not agent.users:
            self.forget(agent)
            self._end(agent)

    def _end(self, agent: SharedAgent) -> None:
        """End `agent`, which no bridge uses, in the background."""
        agent.unpark()
        if agent.agent is None:
            return
        task = asyncio.ensure_future(agent.agent.close())
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)

    def forget(self, agent: SharedAgent) -> None:
        """`agent` runs no more sessions of others (it ended, or failed to start)."""
        agents = self._agents.get(agent.key, [])
        if agent in agents:
            agents.remove(agent)
            if not agents:
                del self._agents[agent.key]

    async def close(self) -> None:
        """End the parked agents (those with bridges on them end with their last)."""
        for agents in list(self._agents.values()):
            for agent in list(agents):
                if not agent.users:
                    self.forget(agent)
                    self._end(agent)
        if self._ending:
            await asyncio.gather(*self._ending, return_exceptions=True)

    def __len__(self) -> int:
        return sum(len(agents) for agents in self._agents.values())
