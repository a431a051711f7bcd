"""Warm agents (docs/design.md §11): for each key a session was opened with, one more engine
whose agent is started and initialized, ready for the next session of the same key.

The key is what changes the agent: the provider, the project, the settings (the config files
and the project file as trusted or not, flags and preset laid over them), avatar's home, the
extra directories, `--trust`, and the variables of the environment that change the agent
(`avatar.providers.variables`: its provider's declared ones and those every agent reads; a
terminal's width or `TERM` are none of them). A session asked for with another key (a config
edited, a project file trusted, another API key) gets a new agent; the warm agents of other keys
are left as they are: another client's miss never stops them. A warm agent whose key is not the
newest of its provider and project stops once it has gone unused for `OTHERS_KEPT` seconds.

The agents start through the engine, as any other (`engine.agent.start`): the sandbox walls and
everything else of starting an agent apply to them alike. The key holds a digest of the
environment and settings, never their values.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from typing import TYPE_CHECKING

from avatar.bridges.acp.shared import SHARED_PROCESS
from avatar.providers.variables import agent_environment

if TYPE_CHECKING:
    from avatar.bridges.base import BaseBridge
    from avatar.core.events import BaseEvent
    from avatar.engine.engine import Engine

#: (provider, project, digest of everything else the agent is started with).
Key = tuple[str, str, str]

#: Seconds an unused warm agent of a key that is not its provider's and project's newest is
#: kept (the newest is kept as long as the server runs).
OTHERS_KEPT = 600.0


def warm_key(engine: Engine) -> Key:
    """What of `engine` changes the agent it starts (see the module docstring)."""
    spec = engine.registry.spec(engine.chosen_provider())
    env = sorted(agent_environment(spec, engine.env).items())
    rest = (repr(engine.settings), repr(env), repr(engine.add_dirs), str(engine.home))
    # `--trust`: the agent starts with the project's own agent config, trusted or not.
    digest = hashlib.sha256(repr((*rest, engine.trust)).encode()).hexdigest()
    return (spec.name, str(engine.cwd), digest)


class _Warm:
    def __init__(self, key: Key, engine: Engine) -> None:
        self.key, self.engine = key, engine
        self.said: list[BaseEvent] = []  # what starting it said (a sandbox notice, say)
        self.unsubscribe = engine.subscribe(self.said.append)
        self.task: asyncio.Task[object] | None = None
        self.made = time.monotonic()
        self.bridge: BaseBridge | None = None  # (once started)
        # Its expiry check, cancelled once it is taken or stopped: a pending timer holds it,
        # and a thousand one-shots in the minute held a thousand engines.
        self.timer: asyncio.TimerHandle | None = None

    def cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def start(self) -> asyncio.Task[object]:
        if self.task is None:
            self.task = asyncio.ensure_future(self._started())
        return self.task

    async def _started(self) -> None:
        self.bridge = bridge = await self.engine.agent.start(self.key[0])
        await bridge.warm_up()  # (its first session's own costs, where that leaves no trace)


class WarmAgents:
    """The warm engines, one per key; see the module docstring (`others_kept`: seconds an
    unused warm agent of a key not the newest of its provider and project is kept)."""

    def __init__(self, others_kept: float = OTHERS_KEPT) -> None:
        self.others_kept = others_kept
        self._slots: dict[Key, _Warm] = {}
        self._stopping: set[asyncio.Task[None]] = set()

    async def take(self, engine: Engine) -> tuple[Engine, list[BaseEvent]]:
        """The engine a new live session runs on, and what its start said: the warm one of
        `engine`'s key when there is one (its start awaited if it is under way; `engine`,
        never started, is dropped), else `engine` itself. Either way another one is made for
        the next session of this key. Where the warm one ran on an agent that takes several
        sessions (the `shared_process` quirk), the next one starts on that same agent now,
        while this session runs (a `session/new` on it, not an agent's start); else it starts
        once this session's first turn is over (`refill`, called by the hub): an agent
        booting beside a session's start or first turn slows it, and some (codex on a new
        home) trip over each other starting at once."""
        key = warm_key(engine)
        warm = self._slots.pop(key, None)
        chosen, said = engine, []
        if warm is not None:
            warm.cancel_timer()
            started = warm.start()
            with contextlib.suppress(Exception):
                await started
            alive = warm.bridge is not None and warm.bridge.alive  # (it may have died since)
            if started.exception() is None and alive and warm.engine.status().provider == key[0]:
                warm.unsubscribe()
                chosen, said = warm.engine, warm.said
            else:
                self._stop(warm)
        self._slots[key] = made = _Warm(key, engine.twin())
        self._check_later(made)
        if chosen is not engine and SHARED_PROCESS in engine.registry.spec(key[0]).quirks:
            made.start()
        return chosen, said

    def refill(self) -> None:
        """Start the agents made by `take()` (a session has opened, or failed to)."""
        for warm in self._slots.values():
            warm.start()

    def _expire(self, warm: _Warm) -> None:
        """Stop `warm` if it is still unused and a newer key of its provider and project is
        kept; else look again in `others_kept` seconds."""
        if self._slots.get(warm.key) is not warm:
            return  # taken, or stopped already
        kin = [w for w in self._slots.values() if w.key[:2] == warm.key[:2]]
        if max(kin, key=lambda w: w.made) is warm:
            self._check_later(warm)
            return
        del self._slots[warm.key]
        self._stop(warm)

    def _check_later(self, warm: _Warm) -> None:
        warm.timer = asyncio.get_running_loop().call_later(self.others_kept, self._expire, warm)

    def _stop(self, warm: _Warm) -> None:
        warm.cancel_timer()

        async def stop() -> None:
            if warm.task is not None:  # (a start under way ends first: then it is stopped)
                with contextlib.suppress(BaseException):
                    await warm.task
            await warm.engine.close()

        task = asyncio.ensure_future(stop())
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    def keys(self) -> list[Key]:
        """The keys of the agents kept warm."""
        return [warm.key for warm in self._slots.values()]

    async def close(self) -> None:
        """Stop every warm agent."""
        slots, self._slots = self._slots, {}
        for warm in slots.values():
            self._stop(warm)
        if self._stopping:
            await asyncio.gather(*self._stopping, return_exceptions=True)
