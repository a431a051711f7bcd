"""Both clients against the shared fake model server: retries, broken streams, abort."""

from __future__ import annotations

import asyncio
import time

import pytest

from avatar.errors import ProviderError
from avatar.native.llm import make_client
from avatar.native.llm.types import ChatRequest, DonePart, Message, TextPart, ToolCallPart, ToolSpec
from avatar.native.models import ModelResolver
from tests.native.helpers import MODELS, native_env
from tests.support.model_server import FakeModelServer, Reply

APIS = ["chat", "anthropic"]
REQ = ChatRequest(
    system="sys",
    messages=[Message("user", "hi")],
    tools=[ToolSpec("ls", "List", {"type": "object", "properties": {"path": {"type": "string"}}})],
)


def client(server: FakeModelServer, api: str, notices: list[str] | None = None):  # type: ignore[no-untyped-def]
    env = native_env(server, api)
    model = ModelResolver.from_settings(None, env).resolve(MODELS[api])
    c = make_client(model, env, on_retry=(notices if notices is not None else []).append)
    c.base_delay = 0.01
    return c


@pytest.mark.parametrize("api", APIS)
async def test_text_and_tool_call(api: str, model_server: FakeModelServer) -> None:
    model_server.script(
        api, Reply.text("Looking.") + Reply.tool_call("ls", {"path": "src"}, id="call_9")
    )
    c = client(model_server, api)
    parts = [p async for p in c.stream(REQ)]
    await c.aclose()
    assert "".join(p.text for p in parts if isinstance(p, TextPart)) == "Looking."
    call = next(p.call for p in parts if isinstance(p, ToolCallPart))
    assert (call.id, call.name, call.arguments) == ("call_9", "ls", {"path": "src"})
    assert parts[-1] == DonePart("tool_use")
    req = model_server.requests_for(api)[0]
    assert req.tool_names() == ["ls"] and req.system_text() == "sys"


@pytest.mark.parametrize("api", APIS)
async def test_retry_after_429_and_500(api: str, model_server: FakeModelServer) -> None:
    model_server.script(api, Reply.error(429, retry_after=0.05), Reply.error(500), Reply.text("ok"))
    notices: list[str] = []
    c = client(model_server, api, notices)
    t0 = time.monotonic()
    parts = [p async for p in c.stream(REQ)]
    await c.aclose()
    assert TextPart("ok") in parts and len(model_server.requests_for(api)) == 3
    assert len(notices) == 2 and time.monotonic() - t0 >= 0.05


@pytest.mark.parametrize("api", APIS)
async def test_disconnect_mid_stream_is_an_error(api: str, model_server: FakeModelServer) -> None:
    model_server.script(api, Reply.text("partial answer") + Reply.disconnect(), Reply.text("x"))
    c = client(model_server, api)
    with pytest.raises(ProviderError, match="broke off"):
        async for _ in c.stream(REQ):
            pass
    await c.aclose()
    assert len(model_server.requests_for(api)) == 1


@pytest.mark.parametrize("api", APIS)
async def test_cancel_closes_the_connection(api: str, model_server: FakeModelServer) -> None:
    model_server.script(api, Reply.slow_text(["a", "b", "c", "d"], delay=0.5))
    c = client(model_server, api)
    seen: list[object] = []

    async def consume() -> None:
        async for part in c.stream(REQ):
            seen.append(part)

    task = asyncio.create_task(consume())
    while not seen:
        await asyncio.sleep(0.01)
    t0 = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - t0 < 0.2
    await c.aclose()
    request = model_server.requests_for(api)[0]
    assert request.wait_finished(3) and request.disconnected


@pytest.mark.parametrize("api", APIS)
async def test_bad_key_error_message(api: str, model_server: FakeModelServer) -> None:
    model_server.script(api, Reply.error(401, "invalid x-api-key"))
    c = client(model_server, api)
    with pytest.raises(ProviderError) as info:
        async for _ in c.stream(REQ):
            pass
    await c.aclose()
    text = str(info.value)
    assert "HTTP 401" in text and "invalid x-api-key" in text and "_API_KEY" in text
    assert "secret" not in text
