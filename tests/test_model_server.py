"""Unit tests of the fake model server (tests/support/model_server.py), driven with httpx."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

import httpx
import pytest

from tests.support.model_server import DEFAULT_TEXT, FakeModelServer, Reply

USER = "turn one: what is 2+2?"


def sse(response: httpx.Response) -> list[tuple[str | None, Any]]:
    """Parse an SSE body into (event name, JSON data or raw string) pairs."""
    events = []
    for block in response.text.replace("\r\n", "\n").split("\n\n"):
        if not block.strip():
            continue
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        raw = "\n".join(data)
        try:
            events.append((name, json.loads(raw)))
        except ValueError:
            events.append((name, raw))
    return events


def anthropic_body(**extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-test",
        "max_tokens": 1024,
        "stream": True,
        "system": "You are a test.",
        "messages": [{"role": "user", "content": USER}],
        **extra,
    }


def responses_body(**extra: Any) -> dict[str, Any]:
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": USER}]}
    return {
        "model": "gpt-test",
        "stream": True,
        "instructions": "Be brief.",
        "input": [item],
    } | extra


def chat_body(**extra: Any) -> dict[str, Any]:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": USER}]
    return {"model": "gpt-test", "stream": True, "messages": messages} | extra


def gemini_body(**extra: Any) -> dict[str, Any]:
    return {
        "contents": [{"role": "user", "parts": [{"text": USER}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        **extra,
    }


GEMINI_STREAM = "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"


@pytest.fixture
def client(model_server: FakeModelServer) -> httpx.Client:
    with httpx.Client(base_url=model_server.url, timeout=10) as c:
        yield c


# -- lifecycle and plumbing -------------------------------------------------------------------


def test_binds_loopback_random_port_and_stops() -> None:
    server = FakeModelServer().start()
    try:
        assert server.url.startswith("http://127.0.0.1:") and server.port > 0
        assert httpx.get(server.url).status_code == 200
    finally:
        server.stop()
    assert not server.running
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{server.port}/", timeout=2)


def test_probe_models_404_and_proxy(model_server: FakeModelServer, client: httpx.Client) -> None:
    assert client.head("/").status_code == 200
    models = client.get("/v1/models").json()
    assert models["object"] == "list" and {"id", "object"} <= set(models["data"][0])
    assert client.get("/v1beta/models").json()["models"]
    missing = client.post("/v2/whatever", json={})
    assert missing.status_code == 404 and "error" in missing.json()
    # Through the server as a proxy, external hosts are refused and recorded.
    with httpx.Client(proxy=model_server.url, timeout=5) as proxied:
        assert proxied.get("http://example.invalid/x").status_code == 403
        with pytest.raises(httpx.ProxyError):
            proxied.get("https://api.example.invalid/")
    assert model_server.proxy_attempts == ["example.invalid", "api.example.invalid:443"]
    assert model_server.requests_for("anthropic") == []


def test_command_line_entry_point() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.model_server", "--text", "cli hello"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = line.split(" on ")[1].split()[0]
        body = chat_body(stream=False)
        reply = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=5).json()
        assert reply["choices"][0]["message"]["content"] == "cli hello"
    finally:
        proc.terminate()
        proc.wait(5)


# -- Anthropic Messages -----------------------------------------------------------------------


def test_anthropic_text_stream(model_server: FakeModelServer, client: httpx.Client) -> None:
    model_server.anthropic.append(Reply.text("four, obviously"))
    r = client.post("/v1/messages?beta=true", json=anthropic_body())
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = sse(r)
    names = [n for n, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert all(n == d["type"] for n, d in events)
    deltas = [d["delta"]["text"] for n, d in events if n == "content_block_delta"]
    assert len(deltas) > 1 and "".join(deltas) == "four, obviously"
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "end_turn" and delta["usage"]["output_tokens"] > 0
    assert events[0][1]["message"]["model"] == "claude-test"
    rec = model_server.requests_for("anthropic")[0]
    assert rec.query == {"beta": "true"} and rec.stream and rec.model == "claude-test"


def test_anthropic_thinking_and_tool_call_split(
    model_server: FakeModelServer, client: httpx.Client
) -> None:
    args = {"command": "ls -la /tmp", "timeout": 5}
    model_server.script(
        "anthropic",
        Reply.thinking("let me look") + Reply.text("Listing.") + Reply.tool_call("Bash", args),
    )
    events = sse(client.post("/v1/messages", json=anthropic_body()))
    starts = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert [b["type"] for b in starts] == ["thinking", "text", "tool_use"]
    assert starts[2]["name"] == "Bash" and starts[2]["id"].startswith("toolu_")
    pieces = [
        d["delta"]["partial_json"]
        for n, d in events
        if n == "content_block_delta" and d["delta"]["type"] == "input_json_delta"
    ]
    assert len(pieces) > 1 and json.loads("".join(pieces)) == args
    kinds = {d["delta"]["type"] for n, d in events if n == "content_block_delta"}
    assert {"thinking_delta", "signature_delta", "text_delta"} <= kinds
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_anthropic_json_and_count_tokens(
    model_server: FakeModelServer, client: httpx.Client
) -> None:
    model_server.script("anthropic", Reply.text("hi") + Reply.tool_call("Read", {"p": 1}, id="t1"))
    msg = client.post("/v1/messages", json=anthropic_body(stream=False)).json()
    assert msg["type"] == "message" and msg["stop_reason"] == "tool_use"
    assert msg["content"] == [
        {"type": "text", "text": "hi"},
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"p": 1}},
    ]
    count = client.post("/v1/messages/count_tokens?beta=true", json=anthropic_body())
    assert count.json()["input_tokens"] > 0
    # count_tokens never consumes the scripted queue.
    assert [r.kind for r in model_server.requests] == ["main", "count_tokens"]


def test_claude_side_requests_do_not_consume_the_queue(
    model_server: FakeModelServer, client: httpx.Client
) -> None:
    model_server.anthropic.append("for the conversation")
    probe = client.post("/v1/messages", json=anthropic_body(max_tokens=1, stream=False)).json()
    assert probe["stop_reason"] == "max_tokens"
    schema = {"type": "object", "properties": {"title": {"type": "string"}}}
    title_req = anthropic_body(
        stream=False, output_config={"format": {"type": "json_schema", "schema": schema}}
    )
    title = client.post("/v1/messages", json=title_req).json()
    assert json.loads(title["content"][0]["text"]) == {"title": "Fake session title"}
    reasons = [r.side_reason for r in model_server.side_requests("anthropic")]
    assert reasons == ["claude-probe", "claude-structured"]
    main = client.post("/v1/messages", json=anthropic_body(stream=False)).json()
    assert main["content"][0]["text"] == "for the conversation"


def test_side_request_classification_can_be_turned_off() -> None:
    with FakeModelServer(side_requests=False) as server:
        server.gemini.append("scripted")
        url = f"{server.url}/v1beta/models/m:generateContent"
        r = httpx.post(url, json=gemini_body(), timeout=5).json()
        assert r["candidates"][0]["content"]["parts"][0]["text"] == "scripted"
        assert server.requests[0].kind == "main"


# -- OpenAI Responses -------------------------------------------------------------------------


def test_responses_text_stream(model_server: FakeModelServer, client: httpx.Client) -> None:
    model_server.responses.append(Reply.text("It is four."))
    events = sse(client.post("/v1/responses", json=responses_body()))
    names = [n for n, _ in events]
    assert names == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * 3,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    seqs = [d["sequence_number"] for _, d in events]
    assert seqs == sorted(seqs)
    done = events[-1][1]["response"]
    assert done["status"] == "completed"
    assert done["output"][0]["content"][0]["text"] == "It is four."
    usage = done["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0


def test_responses_function_call(model_server: FakeModelServer, client: httpx.Client) -> None:
    args = {"cmd": ["bash", "-lc", "ls"], "workdir": "/tmp"}
    model_server.responses.append(Reply.tool_call("shell", args, id="call_abc"))
    events = sse(client.post("/v1/responses", json=responses_body()))
    added = next(d["item"] for n, d in events if n == "response.output_item.added")
    assert added["type"] == "function_call" and added["call_id"] == "call_abc"
    deltas = [d["delta"] for n, d in events if n == "response.function_call_arguments.delta"]
    assert len(deltas) > 1 and json.loads("".join(deltas)) == args
    item = next(d["item"] for n, d in events if n == "response.output_item.done")
    assert item["name"] == "shell" and json.loads(item["arguments"]) == args
    assert events[-1][0] == "response.completed"


def test_responses_reasoning_and_json(model_server: FakeModelServer, client: httpx.Client) -> None:
    model_server.responses.append(Reply.thinking("hmm") + Reply.text("ok"), "plain")
    names = [n for n, _ in sse(client.post("/v1/responses", json=responses_body()))]
    assert "response.reasoning_summary_text.delta" in names
    body = client.post("/v1/responses", json=responses_body(stream=False)).json()
    assert body["object"] == "response" and body["output"][0]["content"][0]["text"] == "plain"


# -- OpenAI chat completions ------------------------------------------------------------------


def test_chat_stream_text_tools_usage(model_server: FakeModelServer, client: httpx.Client) -> None:
    model_server.chat.append(
        Reply.text("Checking.") + Reply.tool_call("read", {"path": "a.txt"}) + Reply.tool_call("ls")
    )
    r = client.post("/v1/chat/completions", json=chat_body(stream_options={"include_usage": True}))
    events = sse(r)
    assert events[-1] == (None, "[DONE]")
    chunks = [d for _, d in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "Checking."
    calls: dict[int, dict[str, str]] = {}
    pieces = 0
    for c in chunks:
        for tc in (c["choices"][0]["delta"].get("tool_calls") or []) if c["choices"] else []:
            slot = calls.setdefault(tc["index"], {"id": "", "name": "", "arguments": ""})
            slot["id"] += tc.get("id", "")
            slot["name"] += tc.get("function", {}).get("name", "")
            slot["arguments"] += tc.get("function", {}).get("arguments", "")
            pieces += 1
    assert calls[0]["name"] == "read" and json.loads(calls[0]["arguments"]) == {"path": "a.txt"}
    assert calls[1]["name"] == "ls" and json.loads(calls[1]["arguments"]) == {}
    assert pieces > 3 and calls[0]["id"] != calls[1]["id"]
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["prompt_tokens"] > 0


def test_chat_json_and_stop_reasons(model_server: FakeModelServer, client: httpx.Client) -> None:
    model_server.chat.append(Reply.text("cut").with_stop("max_tokens"))
    body = client.post("/v1/chat/completions", json=chat_body(stream=False)).json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0] == {
        "index": 0,
        "message": {"role": "assistant", "content": "cut"},
        "logprobs": None,
        "finish_reason": "length",
    }
    # Without include_usage there is no usage chunk.
    events = sse(client.post("/v1/chat/completions", json=chat_body()))
    assert all("usage" not in d for _, d in events[:-1])
    assert events[-2][1]["choices"][0]["finish_reason"] == "stop"


# -- Gemini -----------------------------------------------------------------------------------


def test_gemini_stream_text_and_function_call(
    model_server: FakeModelServer, client: httpx.Client
) -> None:
    model_server.gemini.append(Reply.text("Four it is.") + Reply.tool_call("ls", {"dir": "."}))
    events = sse(client.post(GEMINI_STREAM, json=gemini_body()))
    parts = [p for _, d in events for p in d["candidates"][0]["content"]["parts"]]
    assert "".join(p.get("text", "") for p in parts) == "Four it is."
    assert parts[-1] == {"functionCall": {"name": "ls", "args": {"dir": "."}}}
    last = events[-1][1]
    assert last["candidates"][0]["finishReason"] == "STOP"
    assert last["usageMetadata"]["totalTokenCount"] > 0
    rec = model_server.requests_for("gemini")[0]
    assert rec.model == "gemini-test" and rec.query == {"alt": "sse"}


def test_gemini_generate_content_is_a_side_request(
    model_server: FakeModelServer, client: httpx.Client
) -> None:
    model_server.gemini.append("for the conversation")
    schema = {
        "type": "OBJECT",
        "properties": {
            "complexity_reasoning": {"type": "STRING"},
            "complexity_score": {"type": "INTEGER"},
        },
    }
    body = gemini_body(
        generationConfig={"responseMimeType": "application/json", "responseJsonSchema": schema}
    )
    r = client.post("/v1beta/models/flash-lite:generateContent", json=body).json()
    answer = json.loads(r["candidates"][0]["content"]["parts"][0]["text"])
    assert answer == {"complexity_reasoning": "fake", "complexity_score": 1}
    assert len(model_server.gemini) == 1  # still queued for the conversation
    assert model_server.side_requests("gemini")[0].side_reason == "gemini-generateContent"
    events = sse(client.post(GEMINI_STREAM, json=gemini_body()))
    assert events[0][1]["candidates"][0]["content"]["parts"][0]["text"] == "for "
    count = client.post("/v1beta/models/x:countTokens", json=gemini_body()).json()
    assert count["totalTokens"] > 0


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("api", "path", "body", "check"),
    [
        ("anthropic", "/v1/messages", anthropic_body(), lambda b: b["error"]["type"]),
        ("responses", "/v1/responses", responses_body(), lambda b: b["error"]["code"]),
        ("chat", "/v1/chat/completions", chat_body(), lambda b: b["error"]["code"]),
        ("gemini", GEMINI_STREAM, gemini_body(), lambda b: b["error"]["status"]),
    ],
)
def test_error_shapes_with_retry_after(
    model_server: FakeModelServer, client: httpx.Client, api: str, path: str, body: Any, check: Any
) -> None:
    expected = {
        "anthropic": "rate_limit_error",
        "responses": "rate_limit_exceeded",
        "chat": "rate_limit_exceeded",
        "gemini": "RESOURCE_EXHAUSTED",
    }[api]
    model_server.script(api, Reply.error(429, retry_after=2), "recovered")
    r = client.post(path, json=body)
    assert r.status_code == 429
    assert r.headers["retry-after"] == "2" and r.headers["retry-after-ms"] == "2000"
    assert check(r.json()) == expected
    assert client.post(path, json=body).status_code == 200


def test_error_body_override_and_500(model_server: FakeModelServer, client: httpx.Client) -> None:
    model_server.script("anthropic", Reply.error(529), Reply.error(500, body={"custom": True}))
    first = client.post("/v1/messages", json=anthropic_body())
    assert first.status_code == 529 and first.json()["error"]["type"] == "overloaded_error"
    second = client.post("/v1/messages", json=anthropic_body())
    assert second.status_code == 500 and second.json() == {"custom": True}


@pytest.mark.parametrize(
    ("api", "path", "body"),
    [
        ("anthropic", "/v1/messages", anthropic_body()),
        ("responses", "/v1/responses", responses_body()),
        ("chat", "/v1/chat/completions", chat_body()),
        ("gemini", GEMINI_STREAM, gemini_body()),
    ],
)
def test_stream_error_mid_answer(
    model_server: FakeModelServer, client: httpx.Client, api: str, path: str, body: Any
) -> None:
    model_server.script(api, Reply.text("partial") + Reply.stream_error("boom"))
    r = client.post(path, json=body)
    assert r.status_code == 200
    name, last = sse(r)[-1]
    if api == "anthropic":
        assert name == "error" and last["error"] == {"type": "overloaded_error", "message": "boom"}
    elif api == "responses":
        assert name == "response.failed" and last["response"]["error"]["message"] == "boom"
    else:
        assert last["error"]["message"] == "boom"
    # Without streaming the same reply is an HTTP 500.
    non_stream = {**body, "stream": False}
    path = path.replace("streamGenerateContent?alt=sse", "generateContent")
    with FakeModelServer(side_requests=False) as plain:
        plain.script(api, Reply.text("partial") + Reply.stream_error("boom"))
        r = httpx.post(plain.url + path, json=non_stream, timeout=5)
    assert r.status_code == 500 and "boom" in r.text


def test_invalid_json_is_a_400(client: httpx.Client) -> None:
    r = client.post("/v1/chat/completions", content=b"{not json", headers={"content-type": "x"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"


# -- scripting and recording ------------------------------------------------------------------


def test_default_reply_any_queue_and_callables(
    model_server: FakeModelServer, client: httpx.Client
) -> None:
    def text(r: httpx.Response) -> str:
        return r.json()["choices"][0]["message"]["content"]

    assert text(client.post("/v1/chat/completions", json=chat_body(stream=False))) == DEFAULT_TEXT
    model_server.default_text = "new default"
    model_server.any.append("from any")
    model_server.chat.append(lambda req: Reply.text(f"echo: {req.last_user_text()}"))
    got = [
        text(client.post("/v1/chat/completions", json=chat_body(stream=False))) for _ in range(3)
    ]
    assert got == [f"echo: {USER}", "from any", "new default"]


def test_recording_helpers(model_server: FakeModelServer, client: httpx.Client) -> None:
    history = [
        {"role": "user", "content": "turn one"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "Read", "input": {"path": "x"}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t", "content": "file body"}],
        },
        {"role": "user", "content": [{"type": "text", "text": "turn two"}]},
    ]
    tools = [{"name": "Read", "input_schema": {"type": "object"}}]
    client.post(
        "/v1/messages",
        json=anthropic_body(messages=history, tools=tools),
        headers={"x-api-key": "test", "anthropic-version": "2023-06-01"},
    )
    rec = model_server.requests_for("anthropic")[0]
    assert rec.headers["x-api-key"] == "test"
    assert [m.role for m in rec.messages()] == ["system", "user", "assistant", "tool", "user"]
    assert rec.system_text() == "You are a test."
    assert model_server.conversation_texts(rec) == rec.conversation_texts()
    assert rec.conversation_texts()[0] == "turn one" and "file body" in rec.all_text()
    assert rec.last_user_text() == "turn two" and rec.tool_names() == ["Read"]
    assert rec.reply is not None and rec.reply.full_text == DEFAULT_TEXT
    assert rec.wait_finished(5) and rec.status == 200
    # Each API's conversation is normalised the same way.
    client.post("/v1/responses", json=responses_body())
    client.post("/v1/chat/completions", json=chat_body())
    client.post(GEMINI_STREAM, json=gemini_body())
    for api in ("responses", "chat", "gemini"):
        (r,) = model_server.requests_for(api)
        assert r.last_user_text() == USER and r.system_text() == "Be brief.", api
    assert len(model_server.requests) == 4


def test_slow_stream_wait_for_request_and_client_abort(model_server: FakeModelServer) -> None:
    model_server.chat.append(Reply.slow_text(["a", "b", "c", "d", "e"], delay=0.15))
    got: list[str] = []

    def consume() -> None:
        with (
            httpx.Client(timeout=10) as c,
            c.stream(
                "POST", f"{model_server.openai_base_url}/chat/completions", json=chat_body()
            ) as r,
        ):
            for line in r.iter_lines():
                if '"content": "b"' in line:
                    got.append(line)
                    return  # closing the stream mid-answer = client abort

    n = len(model_server.requests)
    t = threading.Thread(target=consume)
    t.start()
    req = model_server.wait_for_request(lambda r: USER in r.all_text(), timeout=5, start=n)
    t.join(10)
    assert got and req.wait_finished(5)
    assert req.disconnected
    with pytest.raises(TimeoutError):
        model_server.wait_for_request(api="gemini", timeout=0.1)


def test_disconnect_and_stop_cut_streams(model_server: FakeModelServer) -> None:
    model_server.anthropic.append(Reply.text("partial") + Reply.disconnect())
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(f"{model_server.url}/v1/messages", json=anthropic_body(), timeout=5)
    # stop() ends a stream that would otherwise take a minute.
    model_server.anthropic.append(Reply.slow_text(["x"] * 60, delay=1.0))
    errors: list[BaseException] = []

    def consume() -> None:
        try:
            httpx.post(f"{model_server.url}/v1/messages", json=anthropic_body(), timeout=10)
        except httpx.HTTPError as exc:
            errors.append(exc)

    t = threading.Thread(target=consume)
    t.start()
    model_server.wait_for_request(timeout=5, start=1)
    model_server.stop()
    t.join(30)
    assert not t.is_alive() and errors  # cut, not the minute the stream would take


def test_reset_clears_queues_and_requests(
    model_server: FakeModelServer, client: httpx.Client
) -> None:
    model_server.script("gemini", "x").script("chat", "y")
    client.get("/")
    model_server.reset()
    assert model_server.requests == [] and len(model_server.gemini) == len(model_server.chat) == 0
    with pytest.raises(ValueError):
        model_server.script("nope", "z")
