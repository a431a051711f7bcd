"""Fire-and-forget work on the event loop, kept referenced until done (asyncio holds only a
weak reference to a task: one nobody keeps may be collected midway)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


class BackgroundTasks:
    """Work started and awaited by nobody (a permission question answered while a turn
    streams on, a page's prompt), kept referenced until it is done."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Future[None]] = set()

    def __call__(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def wait(self) -> None:
        """Until the work started so far (and what it starts meanwhile) is done."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
