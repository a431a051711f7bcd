"""Both clients over real HTTP: retries, broken streams, abort, and what a one-shot imports."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from avatar.core.errors import ProviderError
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
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await c.aclose()
    request = model_server.requests_for(api)[0]
    assert request.wait_finished(30) and request.disconnected


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


class SilentServer:
    """A loopback HTTP server that answers from a script, then says nothing more.

    Each request on a connection takes the next reply (raw bytes). A reply marked `stall` is
    sent and then the connection is only watched: `hung_up` is set when the client closes it
    (a read returns end-of-file), which is how these tests see that an abort cut it.
    """

    def __init__(self, *replies: tuple[bytes, bool]) -> None:
        self.replies = list(replies)
        self.requests = 0
        self.request_seen = threading.Event()
        self.hung_up = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._sock.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(STALL)
        with conn:
            buffer = b""
            while self.replies:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length: *(\d+)", head)[1])  # type: ignore[index]
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                buffer = buffer[length:]
                self.requests += 1
                self.request_seen.set()
                reply, stall = self.replies.pop(0)
                conn.sendall(reply)
                if stall:
                    try:
                        while conn.recv(65536):
                            pass
                    except OSError:
                        pass
                    self.hung_up.set()
                    return


def _sse(api: str) -> bytes:
    """Response headers and one event carrying the text "a", in `api`'s stream format."""
    if api == "anthropic":
        delta = {"type": "text_delta", "text": "a"}
        event = (
            b"event: content_block_delta\ndata: "
            + json.dumps({"type": "content_block_delta", "index": 0, "delta": delta}).encode()
        )
    else:
        event = (
            b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": "a"}}]}).encode()
        )
    chunk = event + b"\n\n"
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    return head + b"%x\r\n%s\r\n" % (len(chunk), chunk)


def _error(status: int, retry_after: str | None = None) -> bytes:
    body = b'{"error": {"type": "server_error", "message": "try again"}}'
    extra = f"retry-after: {retry_after}\r\n".encode() if retry_after else b""
    return (
        f"HTTP/1.1 {status} Error\r\ncontent-type: application/json\r\n".encode()
        + extra
        + f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )


def silent_client(server: SilentServer, api: str, **kw: float):  # type: ignore[no-untyped-def]
    env = {"OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_API_KEY": "sk-test-secret-123456"}
    if api == "anthropic":
        env = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-ant-test-secret-123456"}
    model = ModelResolver.from_settings(None, env).resolve(MODELS[api])
    c = make_client(model, env, read_timeout=STALL, **kw)
    c.base_delay = 0.01
    return c


@pytest.mark.parametrize("how", ["cancel", "aclose"])
@pytest.mark.parametrize("api", APIS)
async def test_abort_while_the_server_is_silent(api: str, how: str) -> None:
    # One part, then the server says nothing: the client waits in a socket read.
    server = SilentServer((_sse(api), True))
    c = silent_client(server, api)
    parts = c.stream(REQ)
    first = await parts.__anext__()
    assert first == TextPart("a")
    if how == "cancel":
        task = asyncio.create_task(parts.__anext__())
        await asyncio.sleep(0.05)  # let it wait for the next event
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    else:  # the consumer stops iterating and closes the generator (GeneratorExit)
        await parts.aclose()
    # The connection is closed by the abort: the server, silent for STALL, never ends it.
    assert await asyncio.to_thread(server.hung_up.wait, STALL / 2)
    await c.aclose()
    server.close()


@pytest.mark.parametrize("retry", [False, True], ids=["first-call", "retry"])
@pytest.mark.parametrize("api", APIS)
async def test_abort_before_the_headers_cuts_the_connection(api: str, retry: bool) -> None:
    # After an HTTP error the retry may go out on the same (kept-alive) connection; an abort
    # while waiting for its headers cuts that one just the same.
    server = SilentServer(*([(_error(500), False)] if retry else []), (b"", True))
    c = silent_client(server, api)
    task = asyncio.create_task(c.complete(REQ))
    while server.requests < 1 + retry:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(server.hung_up.wait, STALL / 2)
    await c.aclose()
    server.close()


@pytest.mark.parametrize("api", APIS)
async def test_abort_while_waiting_to_retry(api: str) -> None:
    server = SilentServer((_error(429, retry_after="30"), False))
    notices: list[str] = []
    c = silent_client(server, api, on_retry=notices.append)  # type: ignore[arg-type]
    task = asyncio.create_task(c.complete(REQ))
    while not notices:
        await asyncio.sleep(0.01)
    assert "retrying in 30.0 s" in notices[0]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert server.requests == 1  # cancelled in the wait: no retry went out
    await c.aclose()
    server.close()


@pytest.mark.parametrize("api", APIS)
async def test_a_silent_server_still_hits_the_read_timeout(
    api: str, model_server: FakeModelServer
) -> None:
    model_server.script(api, Reply.text("a") + Reply.slow_text(["b"], delay=STALL))
    c = client(model_server, api, read_timeout=0.3)
    # The reply stalls for STALL (30 s) and then ends well: the error is the read timeout's.
    with pytest.raises(ProviderError, match="the stream broke off"):
        async for _ in c.stream(REQ):
            pass
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


def test_one_shot_chat_imports_only_what_it_uses(
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
    # httpx's command-line module (rich, pygments), pydantic's plugin scan (importlib.metadata)
    # and the REPL / ACP stacks are not a one-shot's business.
    unused = {"rich", "pygments", "importlib.metadata", "prompt_toolkit", "acp"}
    assert not unused & modules, sorted(unused & modules)
    # What the async HTTP client costs: httpcore runs its async pool on anyio, whose asyncio
    # backend is imported on the first request (~30 ms here; the benchmark of the one-shot
    # against the earlier threaded sync client decided that it is worth it).
    assert "anyio._backends._asyncio" in modules
