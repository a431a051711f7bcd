"""The server's side of `avatar attach` (and of a REPL run through the server): one client
on one live session for as long as its connection lasts.

The first frame answers with the session (`ok`: its `LiveInfo`), the conversation so far
(`history`: messages as `{role, text, tool_calls}`) and how it was opened (`started`); then
every event of the session comes as `{"event": ...}`, starting with the running turn's (its
events so far, a permission question waiting among them). The client sends prompts, answers
and cancels whenever it likes (`avatar.server.protocol`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, cast

from avatar.core.errors import AvatarError
from avatar.policy.permissions import Refusal

if TYPE_CHECKING:
    from avatar.policy.permissions import Answer
    from avatar.server.hub import Event, Hub, LiveSession
    from avatar.server.peer import Peer


def answer_of(text: str) -> Answer | Refusal:
    """A permission answer as a client sends it: a word of the menu, else a refusal saying
    what to do instead."""
    if text in ("allow", "always", "deny"):
        return cast("Answer", text)
    return Refusal(text)


def history_of(live: LiveSession) -> list[dict[str, Any]]:
    """The session's conversation so far, as the attach frame carries it: without the
    running turn, which the attached client gets from its start (`since_turn`)."""
    transcript = live.engine.history()
    if transcript is None:
        return []
    messages = transcript.messages
    running = live.running_prompt
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    if running is not None and users and running in messages[users[-1]].text:
        messages = messages[: users[-1]]  # the running turn comes with its events, once
    return [
        {
            "role": m.role,
            "text": m.text,
            "tool_calls": [{"name": c.name, "id": c.id} for c in m.tool_calls],
        }
        for m in messages
    ]


async def attach(hub: Hub, frame: dict[str, Any], peer: Peer) -> None:
    """Serve one attached client on the live session `frame["ref"]` names."""
    try:
        live = hub.get(str(frame.get("ref", "")))
    except AvatarError as e:
        peer.send({"error": str(e), "exit": e.exit_code})
        return
    if live is None:
        ref = frame.get("ref")
        peer.send({"error": f"no live session '{ref}' (avatar ps lists them)", "exit": 1})
        return
    client = str(frame.get("client") or f"attach:{peer.pid}")
    started = live.engine.session
    peer.send(
        {
            "ok": live.info().to_dict(),
            "history": history_of(live),
            "started": started.to_dict() if started is not None else None,
        }
    )
    events = live.subscribe(client, replay=False, since_turn=True, answers=True)
    forwarding = asyncio.ensure_future(_forward(events, peer))
    turns: set[asyncio.Future[Any]] = set()
    try:
        async for request in peer.frames():
            op = request.get("op")
            if op == "prompt":
                turn = asyncio.ensure_future(live.prompt(str(request.get("text", "")), client))
                turns.add(turn)
                turn.add_done_callback(turns.discard)
            elif op == "answer":
                live.answer(str(request.get("id")), answer_of(str(request.get("answer"))), client)
            elif op == "cancel":
                await live.cancel()
            if forwarding.done():  # the session closed
                break
    finally:
        live.detach(client)
        forwarding.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await forwarding


async def _forward(events: AsyncIterator[Event], peer: Peer) -> None:
    async for event in events:
        peer.send({"event": event})
        with contextlib.suppress(ConnectionError):
            await peer.writer.drain()
