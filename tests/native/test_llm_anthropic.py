"""Anthropic Messages client against recorded stream shapes (served by httpx.MockTransport)."""

from __future__ import annotations

import pytest

from avatar.core.errors import ProviderError
from avatar.native.llm.anthropic import AnthropicClient, to_anthropic_messages
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
from tests.native.helpers import REQ, Scripted, anthropic_model, error, sse


def client(handler: Scripted, **kw: object) -> AnthropicClient:
    env = {"ANTHROPIC_API_KEY": "sk-ant-test-0123456789"}
    return AnthropicClient(
        anthropic_model(), env, transport=handler.transport(), base_delay=0, **kw
    )


async def collect(c: AnthropicClient, request: ChatRequest = REQ) -> list[object]:
    return [p async for p in c.stream(request)]


async def test_text_stream_usage_and_request_shape() -> None:
    h = Scripted([sse("anthropic/text.sse")])
    parts = await collect(client(h))
    assert "".join(p.text for p in parts if isinstance(p, TextPart)) == "Hello! How can I help?"
    usage = next(p for p in parts if isinstance(p, UsagePart))
    assert usage == UsagePart(25, 12, 4096, 2048)
    assert parts[-1] == DonePart("end_turn")
    req = h.requests[0]
    assert req.url == "http://test.local/v1/messages"
    assert req.headers["x-api-key"] == "sk-ant-test-0123456789"
    assert req.headers["anthropic-version"] == "2023-06-01"
    body = h.bodies()[0]
    assert body["max_tokens"] == 32_000 and body["stream"] is True
    assert body["system"][0]["text"] == "be brief"
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][0] == {
        "name": "read",
        "description": "Read a file",
        "input_schema": {"type": "object", "properties": {}},
    }


async def test_tool_use_split_json_and_empty_input() -> None:
    h = Scripted([sse("anthropic/tool_use.sse")])
    parts = await collect(client(h))
    calls = [p.call for p in parts if isinstance(p, ToolCallPart)]
    assert calls == [
        ToolCall(
            "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "write", {"path": "notes/a.txt", "content": "hi\n"}
        ),
        ToolCall("toolu_01NRLabsLyVHZPKxbKvkfSMn", "ls", {}),
    ]
    assert TextPart("I'll write the file.") in parts
    assert parts[-1] == DonePart("tool_use")


async def test_thinking_and_cumulative_usage_in_message_delta() -> None:
    h = Scripted([sse("anthropic/thinking.sse")])
    parts = await collect(client(h))
    assert ThinkingPart("Simple arithmetic: 2 + 2 = 4.") in parts
    usage = next(p for p in parts if isinstance(p, UsagePart))
    assert (usage.input_tokens, usage.output_tokens) == (36, 150)
    assert parts[-1] == DonePart("max_tokens")


async def test_overloaded_529_is_retried() -> None:
    h = Scripted([error("anthropic/error_529.json", 529), sse("anthropic/text.sse")])
    parts = await collect(client(h))
    assert parts[-1] == DonePart("end_turn") and len(h.requests) == 2


async def test_overloaded_error_event_before_output_is_retried() -> None:
    h = Scripted([sse("anthropic/midstream_overloaded.sse"), sse("anthropic/text.sse")])
    parts = await collect(client(h))
    assert parts[-1] == DonePart("end_turn") and len(h.requests) == 2


async def test_400_is_reported_with_the_api_message() -> None:
    h = Scripted([error("anthropic/error_400.json", 400)])
    with pytest.raises(ProviderError, match=r"invalid_request_error: messages\.1\.content\.0"):
        await collect(client(h))
    assert len(h.requests) == 1


def test_messages_are_merged_and_tool_results_lead_the_user_turn() -> None:
    msgs = [
        Message("user", "do it"),
        Message(
            "assistant", "ok", tool_calls=[ToolCall("call.1", "ls", {}), ToolCall("c2", "ls", {})]
        ),
        Message("tool", "a", tool_call_id="call.1"),
        Message("user", "also check b"),  # steering typed during the tool run
        Message("tool", "", tool_call_id="c2", is_error=True),
        Message("assistant", ""),  # an aborted, empty answer
        Message("user", "next"),
    ]
    out = to_anthropic_messages(msgs)
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    kinds = [b["type"] for b in out[2]["content"]]
    assert kinds == ["tool_result", "tool_result", "text", "text"]
    assert out[1]["content"][1]["id"] == "call_1"  # sanitized to Anthropic's id alphabet
    assert out[2]["content"][0]["tool_use_id"] == "call_1"
    assert out[2]["content"][1] == {
        "type": "tool_result",
        "tool_use_id": "c2",
        "content": "(no output)",
        "is_error": True,
    }


async def test_base_url_with_v1_suffix() -> None:
    h = Scripted([sse("anthropic/text.sse")])
    c = AnthropicClient(anthropic_model("http://x.local/v1"), {}, transport=h.transport())
    await collect(c)
    assert h.requests[0].url == "http://x.local/v1/messages"
    assert "x-api-key" not in h.requests[0].headers
