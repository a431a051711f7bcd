"""Hang-ups and terminations end avatar cleanly: the running command is cancelled, so its
`finally` stops the agent (and its whole process group) instead of leaving it orphaned when
the terminal closes or a supervisor stops avatar. A terminal that went away is a hang-up too,
whether or not its SIGHUP comes (it comes only to the terminal's own session, and may come
after the first write to it has failed)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

#: The exit status of a command its terminal left (as a shell reports SIGHUP).
HUNG_UP = 128 + signal.SIGHUP


def terminal_gone() -> bool:
    """True when avatar's terminal went away (closed or hung up): asking it its settings
    then fails with EIO, as every write to it does (not a terminal at all: ENOTTY)."""
    import termios

    for fd in (0, 1):
        try:
            termios.tcgetattr(fd)
        except termios.error as e:
            if e.args and e.args[0] == errno.EIO:
                return True
    return False


def run_until_hangup(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`, with SIGHUP and SIGTERM cancelling `main` (exit status 129/143),
    and its terminal going away ending it as SIGHUP does. An exception a loop callback
    raises is one line on stderr (`internal error`), and the loop goes on: never a handler
    that asks for Enter on a terminal that may be gone (prompt-toolkit's, which the prompts
    leave unset: `avatar.cli.repl.prompting.prompt_line`)."""

    async def guarded() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        received: list[int] = []

        def stop(sig: int) -> None:
            received.append(sig)
            task.cancel()

        def on_error(_: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
            if terminal_gone():
                if not received:  # (once: not again into the cleanup it started)
                    stop(signal.SIGHUP)
            elif os.environ.get("AVATAR_DEBUG"):
                loop.default_exception_handler(context)
            else:
                _say_loop_error(context)

        for sig in (signal.SIGHUP, signal.SIGTERM):
            loop.add_signal_handler(sig, stop, sig)
        loop.set_exception_handler(on_error)
        try:
            return await main
        except asyncio.CancelledError:
            if received:
                raise SystemExit(128 + received[0]) from None
            raise
        except OSError as e:  # (a write to a terminal that went away: EIO)
            if e.errno == errno.EIO and terminal_gone():
                raise SystemExit(HUNG_UP) from None
            raise
        finally:
            for sig in (signal.SIGHUP, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    return asyncio.run(guarded())


def _say_loop_error(context: dict[str, Any]) -> None:
    from avatar.cli.failing import say_error

    exc = context.get("exception")
    what = f"{type(exc).__name__}: {exc}" if exc is not None else context.get("message", "?")
    with contextlib.suppress(OSError, ValueError):  # (stderr gone or closed: nobody to tell)
        say_error(f"internal error: {what} (set AVATAR_DEBUG=1 for details)")
