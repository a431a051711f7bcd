"""`avatar chat`: one prompt, streamed; exit 0 ok, 1 agent error, 2 usage, 130 interrupted."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.cli.repl.mentions import read_mentions
from avatar.cli.served_run import SERVING
from avatar.cli.startup import settled

if TYPE_CHECKING:
    from avatar.cli.output.render import LineRenderer
    from avatar.cli.state import AppState
    from avatar.core.prompts import Prompt
    from avatar.engine.engine import Engine


def run_chat(
    state: AppState,
    prompt: str,
    *,
    resume: str | None = None,
    cont: bool = False,
    json_out: bool = False,
    permission: str | None = None,
    session_id: str | None = None,
    source: str | None = None,
    add_dirs: Sequence[Path] = (),
    wait: bool = True,
    worktree: str | None = None,
) -> int:
    """Open (or resume) a session, run one turn, render it, and return the exit code (the
    defaults: `avatar chat PROMPT` with no option of its own).

    A session another process has open is waited for (Ctrl-C gives up) unless `wait` is False;
    `worktree` (not None): the session runs in a new git worktree (`""`: its name generated).
    """
    engine = state.engine(permission=permission, add_dirs=add_dirs)
    asked = read_mentions(prompt, engine.cwd)  # (a bad image fails before any agent starts)
    for image in asked.images:
        sys.stderr.write(f"attached image {image.summary}\n")
    one_shot = not (resume or cont or session_id or source)  # a new session, one turn
    served = SERVING.get()
    if served is not None:  # in the server, for a client: the session is the hub's
        from avatar.cli.chat_served import served_chat

        how = {"resume": resume, "continue_last": cont, "session_id": session_id}
        how |= {"source": source, "worktree": worktree, "wait": wait, "json_out": json_out}
        how |= {"one_shot": one_shot}
        served.later = lambda: served_chat(served, engine, asked, **how)
        return 0
    engine.wait_busy = wait
    engine.one_shot = one_shot
    if one_shot and worktree is None:
        # The agent starts first and boots while the rest of a turn's code loads (asyncio,
        # the renderer, the engine's running half, the bridge: ~50 ms on two cores).
        engine.launch_ahead()
    from avatar.cli.output.render import LineRenderer

    renderer = LineRenderer(json_out)
    engine.subscribe(renderer.on_event)

    async def opened() -> None:
        if worktree is not None:
            made = await engine.enter_worktree(worktree or None)
            sys.stderr.write(made.describe() + "\n")
        await engine.open(resume=resume, continue_last=cont, session_id=session_id, source=source)

    from avatar.cli.signals import run_until_hangup

    return run_until_hangup(_turn(engine, renderer, opened, asked))


async def _turn(
    engine: Engine,
    renderer: LineRenderer,
    open_session: Callable[[], Awaitable[None]],
    prompt: Prompt,
) -> int:
    import asyncio
    import signal

    interrupted = False
    loop = asyncio.get_running_loop()
    cancelling: list[asyncio.Task[None]] = []
    opening = asyncio.ensure_future(open_session())

    def on_sigint() -> None:
        nonlocal interrupted
        if interrupted:  # a second Ctrl-C while cancelling: give up at once
            raise KeyboardInterrupt
        interrupted = True
        if not opening.done():  # e.g. waiting for a session another process holds
            opening.cancel()
            return
        cancelling.append(loop.create_task(engine.cancel()))

    loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        try:
            await opening
        except asyncio.CancelledError:
            if not interrupted:
                raise
            return 130
        settled()
        try:
            async for event in engine.send(prompt):
                renderer.on_event(event)
        except OSError:
            # A full or read-only disk fails the turn's save (already shown as the turn's
            # error) and then avatar's own record of the turn: one line is enough.
            if not renderer.errors:
                raise
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await engine.close()
    if interrupted or renderer.stop_reason == "cancelled":
        return 130
    return 1 if renderer.errors else 0
