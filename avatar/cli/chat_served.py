"""`avatar chat` through the server: the session is the hub's (a live one when `--resume`
names it, shared with its other clients), the output the same lines `chat` prints alone.

The chat renders what opening the session said and the events of its own turn: the turns of
other clients on the same session (running when it joined, or queued before its own) are
theirs to show, never in this chat's output. Its own turn's permission questions are answered
by its own `--permission` rule (`LiveSession.prompt`), and a turn another client interrupted
says who did.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TextIO, cast

from avatar.cli.output.render import LineRenderer, error_line
from avatar.core.events import Notice, event_from_dict
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
    # Whether this chat opened the session ([True]) or joined a live one ([False]), once its
    # open returned; what came before is kept until then: a joiner prints only its own turn.
    opened: list[bool] = []
    early: list[Event] = []

    def render(data: Event) -> None:
        renderer.on_event(event_from_dict(data))

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
            elif kind == "cancelled" and mine and data["client"] != me:
                renderer.on_event(Notice(message=f"{data['client']} interrupted this turn"))
            elif kind in HUB_EVENTS or mine is False:
                continue
            elif mine:
                render(data)
            elif not opened:
                early.append(data)
            elif opened[0]:  # (between turns: the opener's; a joiner's are not its own)
                render(data)

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
        opened.append(live.opener == me)
        joined = live.engine.current
        if opened[0]:  # what opening it said
            for data in early:
                render(data)
        elif joined is not None:
            # joined a live session: its `session:` line, as a resume alone prints it (an
            # agent that loads sessions says loaded; what the other clients' turns said is
            # theirs)
            loads = "load" in live.engine.status().capabilities
            renderer.on_event(replace(joined.started, how="loaded" if loads else "resumed"))
        early.clear()
        rule = engine.settings.permission
        return await _turn(live, me, prompt, rule, renderer, ended, interrupted)
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
    rule: str,
    renderer: LineRenderer,
    ended: asyncio.Event,
    interrupted: asyncio.Event,
) -> int:
    # (`rule`: nobody answers a chat's questions but its own `--permission`, as without a
    # server; a page or terminal joined to the session may not be looking)
    turn = asyncio.ensure_future(live.prompt(prompt, me, rule))

    async def cancel_when_interrupted() -> None:
        await interrupted.wait()
        while not turn.done():
            if live.running_client == me:
                await live.cancel(me)
                return
            await asyncio.sleep(0.05)

    canceller = asyncio.ensure_future(cancel_when_interrupted())
    try:
        result = await turn
        await ended.wait()  # every event of the turn rendered
    finally:
        canceller.cancel()
    if result["error"] is not None:
        line = f"avatar: {result['error']}"
        # (said once: an agent's death can come as an error event of the turn too)
        if not any(error_line(error) == line for error in renderer.errors):
            renderer.err.write(for_terminal(line + "\n", renderer.err))
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
