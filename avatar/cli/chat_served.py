"""`avatar chat` through the server: the session is the hub's (a live one when `--resume`
names it, shared with its other clients), the output the same lines `chat` prints alone.

The chat renders the events outside turns and those of its own turn; the turns of other
clients on the same session (queued before its own) are theirs to show.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TextIO, cast

from avatar.cli.output.render import LineRenderer
from avatar.core.events import event_from_dict
from avatar.policy.terminal_text import for_terminal
from avatar.server.hub import OpenOptions
from avatar.server.shared import HUB_EVENTS

if TYPE_CHECKING:
    from avatar.cli.served_run import Served
    from avatar.core.prompts import Prompt
    from avatar.engine.engine import Engine
    from avatar.server.hub import Event, LiveSession


async def served_chat(served: Served, engine: Engine, prompt: Prompt, **how: Any) -> int:
    """Run `chat` on the hub for the client of `served`: open (or join) the session as
    `how` says (`resume`, `continue_last`, `session_id`, `source`, `worktree`, `wait`,
    `one_shot`, `json_out`), run one turn, render; the exit code of `chat`."""
    json_out = how.pop("json_out")
    renderer = LineRenderer(
        json_out, out=cast("TextIO", served.out), err=cast("TextIO", served.err)
    )
    me = f"chat:{served.peer.pid}"
    ended = asyncio.Event()
    forwarding: list[asyncio.Task[None]] = []

    async def forward(stream: AsyncIterator[Event]) -> None:
        mine: bool | None = None  # in a turn: whether it is this client's
        async for data in stream:
            kind = data["type"]
            if kind == "turn_started":
                mine = data["client"] == me
            elif kind == "turn_ended":
                if data["client"] == me:
                    ended.set()
                mine = None
            elif kind not in HUB_EVENTS and mine is not False:
                renderer.on_event(event_from_dict(data))

    def start(stream: AsyncIterator[Event]) -> None:
        forwarding.append(asyncio.ensure_future(forward(stream)))

    def entered(made: Any) -> None:
        served.err.write(made.describe() + "\n")

    opening = asyncio.ensure_future(
        served.hub.open(
            OpenOptions(cwd=engine.cwd),
            client=me,
            replay=False,
            on_events=start,
            engine=engine,
            entered=entered,
            **how,
        )
    )
    interrupted = asyncio.Event()
    listening = asyncio.ensure_future(_listen(served, interrupted))
    stopped = asyncio.ensure_future(interrupted.wait())
    try:
        done, _ = await asyncio.wait({opening, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if opening not in done:  # Ctrl-C while opening (waiting for a busy session)
            opening.cancel()
            return 130
        live = opening.result()
        joined = live.engine.current
        if live.opener != me and joined is not None:
            # joined a live session: its `session:` line, as a resume alone prints it (an
            # agent that loads sessions says loaded)
            loads = "load" in live.engine.status().capabilities
            renderer.on_event(replace(joined.started, how="loaded" if loads else "resumed"))
        return await _turn(live, me, prompt, renderer, ended, interrupted)
    finally:
        listening.cancel()
        stopped.cancel()
        if opening.done() and not opening.cancelled() and opening.exception() is None:
            opening.result().detach(me)
        for task in forwarding:
            task.cancel()


async def _turn(
    live: LiveSession,
    me: str,
    prompt: Prompt,
    renderer: LineRenderer,
    ended: asyncio.Event,
    interrupted: asyncio.Event,
) -> int:
    turn = asyncio.ensure_future(live.prompt(prompt, me))

    async def cancel_when_interrupted() -> None:
        await interrupted.wait()
        while not turn.done():
            if live.running_client == me:
                await live.cancel()
                return
            await asyncio.sleep(0.05)

    canceller = asyncio.ensure_future(cancel_when_interrupted())
    try:
        result = await turn
        await ended.wait()  # every event of the turn rendered
    finally:
        canceller.cancel()
    if result["error"] is not None:
        renderer.err.write(for_terminal(f"avatar: {result['error']}\n", renderer.err))
        return int(result["exit"])
    if interrupted.is_set() or renderer.stop_reason == "cancelled":
        return 130
    return 1 if renderer.errors else 0


async def _listen(served: Served, interrupted: asyncio.Event) -> None:
    """The client's frames while the chat runs: a `cancel` (Ctrl-C), or its going away."""
    async for frame in served.peer.frames():
        if frame.get("op") == "cancel":
            interrupted.set()
    interrupted.set()  # the client left: nobody reads the answer
