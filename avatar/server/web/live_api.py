"""The live chat's API, which `static/chat.js` calls: the event stream of a live session
(server-sent events, `stream`), and a prompt (with images attached), a permission answer, a
provider switch, a stop, a close. Each takes and gives JSON; a session that is no longer live
is a 404."""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse, Response, StreamingResponse

from avatar.core.errors import AvatarError, UsageError
from avatar.core.prompts import MAX_IMAGE_BYTES, Image, Prompt, image_mime
from avatar.core.tasks import BackgroundTasks
from avatar.policy.permissions import Refusal
from avatar.server.web.holder import HELD, HOLDER
from avatar.server.web.stream import frames

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from starlette.requests import Request

    from avatar.policy.permissions import Answer
    from avatar.server.hub import LiveSession
    from avatar.server.web.context import Web

#: Prompts sent from a page run on; the page follows them on its event stream.
_PROMPTS = BackgroundTasks()
ANSWERS = ("allow", "always", "deny")
#: Images one prompt may carry.
MAX_IMAGES = 8


def _live(request: Request) -> tuple[Web, LiveSession | None]:
    web: Web = request.app.state.web
    return web, web.handles.get(web.hub, request.path_params["handle"])


def _gone(request: Request) -> JSONResponse:
    return JSONResponse({"error": f"no live session {request.path_params['handle']}"}, 404)


async def _body(request: Request) -> dict[str, Any]:
    try:
        data = await request.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


async def events(request: Request) -> Response:
    """`GET /chat/{handle}/events`: the session's events so far, then as they come."""
    web, live = _live(request)
    if live is None:
        return _gone(request)
    client = web.client()
    subscription = live.subscribe(client, replay=True, answers=True)
    # With `replay`, the subscription starts with every event so far: the stream says where
    # they end, so that the page notifies only of what happens after.
    past = len(live.history)

    async def stream() -> AsyncIterator[str]:
        try:  # (while it is open the server is in use: `app.InUse`)
            async for chunk in frames(subscription, live.engine.cwd, past):
                yield chunk
        finally:
            live.detach(client)
            HELD.left(live)

    headers = {"cache-control": "no-store", "x-accel-buffering": "no"}
    return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)


def _image(given: Any) -> Image:
    """An image the page attached (`{name, data}`, the bytes as base64), checked as the
    REPL's `@image` is: by its first bytes, and its size."""
    if not isinstance(given, dict):
        raise UsageError("an image is {name, data}")
    name = str(given.get("name") or "image")[:200]
    try:
        data = base64.b64decode(str(given.get("data", "")), validate=True)
    except (binascii.Error, ValueError):
        raise UsageError(f"{name}: not base64") from None
    if len(data) > MAX_IMAGE_BYTES:
        raise UsageError(f"{name}: image too large to attach (at most {MAX_IMAGE_BYTES:,} bytes)")
    mime = image_mime(data)
    if mime is None:
        raise UsageError(f"{name}: not an image avatar can attach (png, jpeg, gif or webp)")
    return Image(name, mime, data)


async def prompt(request: Request) -> Response:
    """`POST /chat/{handle}/prompt {text, images}`: queue a prompt (202; it streams on the
    events); `images`: `[{name, data}]`, each png, jpeg, gif or webp, base64."""
    _, live = _live(request)
    if live is None:
        return _gone(request)
    data = await _body(request)
    text = str(data.get("text", "")).strip()
    given = data.get("images") or []
    try:
        if not isinstance(given, list) or len(given) > MAX_IMAGES:
            raise UsageError(f"at most {MAX_IMAGES} images to a prompt")
        images = tuple(_image(i) for i in given)
    except UsageError as e:
        return JSONResponse({"error": str(e)}, 400)
    if not text and not images:
        return JSONResponse({"error": "an empty prompt"}, 400)
    sent: str | Prompt = Prompt(text, images) if images else text

    async def run() -> None:
        await live.prompt(sent, HOLDER)

    _PROMPTS(run())
    return JSONResponse({"queued": True}, 202)


async def answer(request: Request) -> Response:
    """`POST /chat/{handle}/answer {id, answer, reason}`: answer a permission question
    (`answer`: allow, always, deny, or tell: a deny with `reason` for the agent)."""
    _, live = _live(request)
    if live is None:
        return _gone(request)
    data = await _body(request)
    said = str(data.get("answer", ""))
    reply: Answer | Refusal
    if said == "tell":
        reply = Refusal(str(data.get("reason", "")).strip() or "no")
    elif said in ANSWERS:
        reply = said  # type: ignore[assignment]
    else:
        return JSONResponse({"error": f"no answer '{said}': allow, always, deny or tell"}, 400)
    answered = live.answer(str(data.get("id", "")), reply, HOLDER)
    return JSONResponse({"answered": answered}, 200 if answered else 409)


async def switch(request: Request) -> Response:
    """`POST /chat/{handle}/switch {provider}`: switch provider with a handoff (after the
    running turn). Every page learns of it on its event stream (`switched`, the handoff in
    it), this one too; the answer says only whether it failed."""
    _, live = _live(request)
    if live is None:
        return _gone(request)
    provider = str((await _body(request)).get("provider", ""))
    try:
        await live.switch(provider, client=HOLDER)
    except AvatarError as e:
        return JSONResponse({"error": str(e)}, 400)
    return JSONResponse({"switched": True})


async def cancel(request: Request) -> Response:
    """`POST /chat/{handle}/cancel`: stop the running turn."""
    _, live = _live(request)
    if live is None:
        return _gone(request)
    await live.cancel()
    return JSONResponse({"cancelled": True})


async def close(request: Request) -> Response:
    """`POST /chat/{handle}/close`: end the live session for every client (its agent stops;
    the session stays in the library)."""
    _, live = _live(request)
    if live is None:
        return _gone(request)
    await live.close()
    return JSONResponse({"closed": True})
