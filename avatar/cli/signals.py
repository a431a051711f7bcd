"""Hang-ups and terminations end avatar cleanly: the running command is cancelled, so its
`finally` stops the agent (and its whole process group) instead of leaving it orphaned when
the terminal closes or a supervisor stops avatar."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_until_hangup(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`, with SIGHUP and SIGTERM cancelling `main` (exit status 129/143)."""

    async def guarded() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        received: list[int] = []

        def stop(sig: int) -> None:
            received.append(sig)
            task.cancel()

        for sig in (signal.SIGHUP, signal.SIGTERM):
            loop.add_signal_handler(sig, stop, sig)
        try:
            return await main
        except asyncio.CancelledError:
            if received:
                raise SystemExit(128 + received[0]) from None
            raise
        finally:
            for sig in (signal.SIGHUP, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    return asyncio.run(guarded())
