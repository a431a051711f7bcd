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
from typing import TYPE_CHECKING, Any

from avatar.core.errors import AvatarError
from avatar.server.shared import answer_of

if TYPE_CHECKING:
    from avatar.server.hub import Event, Hub
    from avatar.server.peer import Peer


async def attach(hub: Hub, frame: dict[str, Any], peer: Peer) -> None:
    """Serve one attached client on the live session `frame["ref"]` names (one the server
    runs or one a REPL hosts: `Hub.attachable`)."""
    try:
        live = hub.attachable(str(frame.get("ref", "")))
    except AvatarError as e:
        peer.send({"error": str(e), "exit": e.exit_code})
        return
    if live is None:
        ref = frame.get("ref")
        peer.send({"error": f"no live session '{ref}' (avatar ps lists them)", "exit": 1})
        return
    client = str(frame.get("client") or f"attach:{peer.pid}")
    try:
        history, events = await live.join(client)
    except AvatarError as e:  # (the REPL hosting it left meanwhile)
        peer.send({"error": str(e), "exit": e.exit_code})
        return
    peer.send({"ok": live.info().to_dict(), "history": history, "started": live.started()})
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
                await live.cancel(client)
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
        if event.get("type") == "closed":  # the session ended: so does the connection
            peer.writer.close()
