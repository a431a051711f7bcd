"""OpenAI-compatible client against recorded stream shapes (served by httpx.MockTransport)."""

from __future__ import annotations

import httpx
import pytest

from avatar.core.errors import ProviderError
from avatar.native.llm.openai import OpenAIClient
from avatar.native.llm.types import (
    ChatRequest,
    DonePart,
    Message,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolCallPart,
    UsagePart,
)
from tests.native.helpers import REQ, Scripted, error, openai_model, sse


def client(handler: Scripted, **kw: object) -> OpenAIClient:
    env = {"OPENAI_API_KEY": "sk-test-0123456789abcdef"}
    return OpenAIClient(openai_model(), env, transport=handler.transport(), base_delay=0, **kw)


async def collect(c: OpenAIClient, request: ChatRequest = REQ) -> list[object]:
    return [p async for p in c.stream(request)]


async def test_text_stream_with_usage_and_request_shape() -> None:
    h = Scripted([sse("openai/text.sse")])
    parts = await collect(client(h))
    assert "".join(p.text for p in parts if isinstance(p, TextPart)) == "Hello! How can I help?"
    usage = next(p for p in parts if isinstance(p, UsagePart))
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (496, 1024, 9)
    assert parts[-1] == DonePart("end_turn")
    req = h.requests[0]
    assert req.url == "http://test.local/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test-0123456789abcdef"
    body = h.bodies()[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    assert body["tools"][0]["function"]["name"] == "read"


async def test_tool_calls_split_across_chunks() -> None:
    h = Scripted([sse("openai/tool_calls.sse")])
    parts = await collect(client(h))
    calls = [p.call for p in parts if isinstance(p, ToolCallPart)]
    assert calls == [
        ToolCall(
            "call_DdmO9pD3xa9XTPNJ32zg2hcA", "write", {"path": "notes/a.txt", "content": "hi\né"}
        ),
        ToolCall("call_Ukw3TBPUvvMdJtGVNqUlDwFe", "read", {"path": "notes/a.txt"}),
    ]
    assert parts[-1] == DonePart("tool_use")


async def test_ollama_whole_tool_call_with_stop_reason_stop() -> None:
    h = Scripted([sse("openai/ollama_tool_call.sse")])
    parts = await collect(client(h))
    calls = [p.call for p in parts if isinstance(p, ToolCallPart)]
    assert calls == [ToolCall("call_w2vg5xfb", "ls", {"path": "src"})]
    assert parts[-1] == DonePart("tool_use")


async def test_reasoning_content_and_length_stop() -> None:
    h = Scripted([sse("openai/vllm_reasoning.sse")])
    parts = await collect(client(h))
    assert ThinkingPart("The user greets me.") in parts
    assert TextPart("Hi there.") in parts
    assert parts[-1] == DonePart("max_tokens")


async def test_history_with_tool_results_is_sent_in_openai_form() -> None:
    h = Scripted([sse("openai/text.sse")])
    history = [
        Message("user", "write it"),
        Message("assistant", "", tool_calls=[ToolCall("c1", "write", {"path": "a"})]),
        Message("tool", "created a", tool_call_id="c1", name="write"),
    ]
    await collect(client(h), ChatRequest(system="", messages=history))
    msgs = h.bodies()[0]["messages"]
    assert msgs[1]["tool_calls"][0]["function"] == {"name": "write", "arguments": '{"path": "a"}'}
    assert msgs[1]["content"] is None
    assert msgs[2] == {"role": "tool", "tool_call_id": "c1", "content": "created a"}


async def test_retry_on_429_honours_retry_after_ms() -> None:
    notices: list[str] = []
    h = Scripted(
        [
            error("openai/error_429.json", 429, {"retry-after-ms": "10"}),
            error("openai/error_429.json", 503),
            sse("openai/text.sse"),
        ]
    )
    parts = await collect(client(h, on_retry=notices.append))
    assert parts[-1] == DonePart("end_turn")
    assert len(h.requests) == 3
    assert len(notices) == 2 and "retrying in 0.0 s" in notices[0]


async def test_retry_on_connection_error() -> None:
    h = Scripted([httpx.ConnectError("refused"), sse("openai/text.sse")])
    parts = await collect(client(h))
    assert parts[-1] == DonePart("end_turn")


async def test_gives_up_after_max_retries_with_api_message() -> None:
    h = Scripted([error("openai/error_429.json", 429) for _ in range(3)])
    with pytest.raises(ProviderError, match="rate_limit_exceeded: Rate limit reached"):
        await collect(client(h, max_retries=2))
    assert len(h.requests) == 3


async def test_long_retry_after_is_not_waited_for() -> None:
    h = Scripted([error("openai/error_429.json", 429, {"retry-after": "3600"})])
    with pytest.raises(ProviderError, match="retry after 3600 s"):
        await collect(client(h))


async def test_401_is_not_retried_and_names_the_key_variable() -> None:
    h = Scripted([error("openai/error_401.json", 401)])
    with pytest.raises(ProviderError) as info:
        await collect(client(h))
    assert len(h.requests) == 1
    assert "invalid_api_key" in str(info.value) and "OPENAI_API_KEY" in str(info.value)
    assert "sk-test-0123456789abcdef" not in str(info.value)


async def test_error_inside_the_stream_after_text_is_an_error_not_a_retry() -> None:
    h = Scripted([sse("openai/midstream_error.sse"), sse("openai/text.sse")])
    with pytest.raises(ProviderError, match="Upstream error"):
        await collect(client(h))
    assert len(h.requests) == 1


async def test_truncated_stream_before_any_output_is_retried() -> None:
    h = Scripted(
        [
            httpx.Response(200, headers={"content-type": "text/event-stream"}, content=b""),
            sse("openai/text.sse"),
        ]
    )
    parts = await collect(client(h))
    assert parts[-1] == DonePart("end_turn") and len(h.requests) == 2


async def test_no_key_sends_no_authorization_header() -> None:
    h = Scripted([sse("openai/text.sse")])
    c = OpenAIClient(openai_model(), {}, transport=h.transport())
    await collect(c)
    assert "authorization" not in h.requests[0].headers


async def test_complete_gathers_text() -> None:
    h = Scripted([sse("openai/text.sse")])
    text, usage = await client(h).complete(REQ)
    assert text == "Hello! How can I help?" and usage is not None
