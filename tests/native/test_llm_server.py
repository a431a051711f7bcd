"""Both clients against the shared fake model server: retries, broken streams, abort."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from avatar.errors import ProviderError
from avatar.native.llm import make_client
from avatar.native.llm.types import ChatRequest, DonePart, Message, TextPart, ToolCallPart, ToolSpec
from avatar.native.models import ModelResolver
from tests.native.helpers import MODELS, native_env
from tests.support.model_server import FakeModelServer, Reply

APIS = ["chat", "anthropic"]
STALL = 30.0  # seconds a "silent" server waits; far beyond anything a test waits for
REQ = ChatRequest(
    system="sys",
    messages=[Message("user", "hi")],
    tools=[ToolSpec("ls", "List", {"type": "object", "properties": {"path": {"type": "string"}}})],
)


def client(server: FakeModelServer, api: str, notices: list[str] | None = None, **kw: float):  # type: ignore[no-untyped-def]
    env = native_env(server, api)
    model = ModelResolver.from_settings(None, env).resolve(MODELS[api])
    c = make_client(model, env, on_retry=(notices if notices is not None else []).append, **kw)
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


def llm_threads() -> set[threading.Thread]:
    """The model-call worker threads alive now."""
    return {t for t in threading.enumerate() if t.name.startswith("avatar-llm-")}


def wait_gone(threads: set[threading.Thread], within: float) -> None:
    """Assert that every thread in `threads` ends within `within` seconds."""
    deadline = time.monotonic() + within
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), f"a worker is still blocked after {within} s"


@pytest.mark.parametrize("how", ["cancel", "aclose"])
@pytest.mark.parametrize("api", APIS)
async def test_abort_while_the_server_is_silent(
    api: str, how: str, model_server: FakeModelServer
) -> None:
    # One part, then the server says nothing: the worker sits in a blocking socket read.
    model_server.script(api, Reply.text("a") + Reply.slow_text(["b"], delay=STALL))
    c = client(model_server, api, read_timeout=STALL)
    before = llm_threads()
    parts = c.stream(REQ)
    first = await parts.__anext__()
    assert first == TextPart("a")
    workers = llm_threads() - before
    assert len(workers) == 1
    if how == "cancel":
        task = asyncio.create_task(parts.__anext__())
        await asyncio.sleep(0.05)  # let it block on the queue
        t0 = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    else:  # the consumer stops iterating and closes the generator (GeneratorExit)
        t0 = time.monotonic()
        await parts.aclose()
    assert time.monotonic() - t0 < 0.2  # the consumer does not wait for the worker
    # Shutting the socket down ends the blocked read at once, long before the read timeout.
    wait_gone(workers, within=1.0)
    await c.aclose()


@pytest.mark.parametrize("retry", [False, True], ids=["first-call", "retry"])
@pytest.mark.parametrize("api", APIS)
async def test_abort_before_the_headers_cuts_a_new_connection(
    api: str, retry: bool, model_server: FakeModelServer
) -> None:
    # A retry after an HTTP error could reuse that error's connection, whose socket the worker
    # would learn only with the headers; the client opens a new one, so the abort cuts it too.
    stalled = Reply.text("late").with_delay(0, latency=STALL)
    model_server.script(api, *([Reply.error(500)] if retry else []), stalled)
    c = client(model_server, api, read_timeout=STALL)
    before = llm_threads()
    task = asyncio.create_task(c.complete(REQ))
    await asyncio.to_thread(model_server.wait_for_request, api=api, start=int(retry), timeout=5)
    await asyncio.sleep(0.05)
    t0 = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - t0 < 0.2
    wait_gone(llm_threads() - before, within=1.0)
    await c.aclose()


@pytest.mark.parametrize("api", APIS)
async def test_a_silent_server_still_hits_the_read_timeout(
    api: str, model_server: FakeModelServer
) -> None:
    model_server.script(api, Reply.text("a") + Reply.slow_text(["b"], delay=STALL))
    c = client(model_server, api, read_timeout=0.3)
    before = llm_threads()
    t0 = time.monotonic()
    with pytest.raises(ProviderError, match="the stream broke off"):
        async for _ in c.stream(REQ):
            pass
    assert time.monotonic() - t0 < 2.0
    wait_gone(llm_threads() - before, within=1.0)
    await c.aclose()


# Runs the real CLI entry point and, at exit, writes the names of the loaded modules to a file.
_LIST_MODULES = """
import atexit, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write("\\n".join(sorted(sys.modules))))
from avatar.cli import main
sys.argv[0] = "avatar"
sys.exit(main())
"""


def test_one_shot_chat_does_not_load_anyio(
    avatar_env: dict[str, str], tmp_path: Path, model_server: FakeModelServer
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    listing = tmp_path / "modules.txt"
    out = subprocess.run(
        [sys.executable, "-c", _LIST_MODULES, str(listing), "-p", "native", "chat", "hi"],
        env=avatar_env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Hello from the fake LLM."
    modules = set(listing.read_text().split())
    assert "httpx" in modules  # the request did go through httpx
    anyio = {m for m in modules if m.partition(".")[0] == "anyio"}
    # The async transport loaded anyio's asyncio backend on the first request (~40-50 ms).
    assert not {m for m in anyio if m.startswith("anyio._backends")}, sorted(anyio)
    # httpcore itself runs `import anyio` when imported; a lazily importing anyio (the one
    # installed here) loads only its package shell for that, and nothing more may follow.
    if "anyio._lazyimport" in anyio:
        assert anyio <= {"anyio", "anyio._lazyimport"}, sorted(anyio)
