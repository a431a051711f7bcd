"""Warm agents (docs/design.md §11): for each provider and project a session was opened on, one more
engine whose agent is started and initialized, ready for the next session of the same key.

The key is everything the agent was started with: the provider, the project, the settings
(the config files and the project file as trusted or not, flags and preset laid over them),
the environment, avatar's home, the extra directories and `--trust`. A session asked for with
another key (a config edited, a project file trusted) gets a new agent and the old warm one
stops.
The agents start through the engine, as any other (`engine.agent.start`): the sandbox walls and
everything else of starting an agent apply to them alike.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from avatar.core.events import BaseEvent
    from avatar.engine.engine import Engine

Key = tuple[str, ...]


def warm_key(engine: Engine) -> Key:
    """What an agent `engine` starts is started with (see the module docstring)."""
    return (
        engine.chosen_provider(),
        str(engine.cwd),
        repr(engine.settings),
        repr(sorted(engine.env.items())),
        repr(engine.add_dirs),
        str(engine.home),
        # `--trust`: the agent starts with the project's own agent config, trusted or not.
        str(engine.trust),
    )


class _Warm:
    def __init__(self, key: Key, engine: Engine) -> None:
        self.key, self.engine = key, engine
        self.said: list[BaseEvent] = []  # what starting it said (a sandbox notice, say)
        self.unsubscribe = engine.subscribe(self.said.append)
        self.task: asyncio.Task[object] | None = None

    def start(self) -> asyncio.Task[object]:
        if self.task is None:
            self.task = asyncio.ensure_future(self._started())
        return self.task

    async def _started(self) -> None:
        bridge = await self.engine.agent.start(self.key[0])
        await bridge.warm_up()  # (its first session's own costs, where that leaves no trace)


class WarmAgents:
    """The warm engines, one per provider and project; see the module docstring."""

    def __init__(self) -> None:
        self._slots: dict[Key, _Warm] = {}
        self._stopping: set[asyncio.Task[None]] = set()

    async def take(self, engine: Engine) -> tuple[Engine, list[BaseEvent]]:
        """The engine a new live session runs on, and what its start said: the warm one of
        `engine`'s key when there is one (its start awaited if it is under way; `engine`,
        never started, is dropped), else `engine` itself. Either way another one is made for
        the next session of this key, to start once this one's first turn is over (`refill`,
        called by the hub): an agent booting beside a session's start or first turn slows
        it, and some (codex on a new home) trip over each other starting at once."""
        key = warm_key(engine)
        slot = key[:2]
        warm = self._slots.pop(slot, None)
        chosen, said = engine, []
        if warm is not None and warm.key == key:
            started = warm.start()
            with contextlib.suppress(Exception):
                await started
            if started.exception() is None and warm.engine.status().provider == key[0]:
                warm.unsubscribe()
                chosen, said = warm.engine, warm.said
            else:
                self._stop(warm)
        elif warm is not None:  # another config, trust or environment: that agent is stale
            self._stop(warm)
        self._slots[slot] = _Warm(key, engine.twin())
        return chosen, said

    def refill(self) -> None:
        """Start the agents made by `take()` (a session has opened, or failed to)."""
        for warm in self._slots.values():
            warm.start()

    def _stop(self, warm: _Warm) -> None:
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
