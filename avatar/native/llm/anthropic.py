"""Anthropic Messages API: `POST {base}/v1/messages` with `stream: true`.

Consecutive messages of one role are merged (the API wants strict alternation, and tool
results plus steering text arrive as separate messages here); the system prompt and the last
message carry `cache_control` so long sessions are billed at cache-read prices.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from avatar.native.llm.base import LLMClient, RetryableStreamError, tool_call_part
from avatar.native.llm.types import (
    ChatRequest,
    DonePart,
    Message,
    StopReason,
    StreamPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UsagePart,
)

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
MAX_TOKENS_CAP = 32_000
_STOP: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "pause_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
}
_RETRYABLE_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})
_BAD_ID = re.compile(r"[^A-Za-z0-9_-]")
_CACHE = {"type": "ephemeral"}


def _tool_id(call_id: str | None) -> str:
    # Anthropic ids must match ^[a-zA-Z0-9_-]+$; calls made by another api may not.
    return _BAD_ID.sub("_", call_id or "") or "call"


def to_anthropic_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """The conversation as Messages-API turns: merged by role, no empty blocks."""
    out: list[dict[str, Any]] = []
    for m in messages:
        blocks: list[dict[str, Any]] = []
        if m.role == "tool":
            role = "user"
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": _tool_id(m.tool_call_id),
                "content": m.text or "(no output)",
            }
            if m.is_error:
                block["is_error"] = True
            blocks.append(block)
        else:
            role = m.role
            if m.text:
                blocks.append({"type": "text", "text": m.text})
            blocks.extend(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": i.mime, "data": i.base64},
                }
                for i in m.images
            )
            for c in m.tool_calls or ():
                blocks.append(
                    {"type": "tool_use", "id": _tool_id(c.id), "name": c.name, "input": c.arguments}
                )
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            previous = out[-1]["content"]
            if role == "user" and blocks[0]["type"] == "tool_result":
                # Results must open the user turn; text typed meanwhile goes after them.
                results = [b for b in previous if b["type"] == "tool_result"]
                others = [b for b in previous if b["type"] != "tool_result"]
                out[-1]["content"] = results + blocks + others
            else:
                previous.extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    if out and out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": "(continued)"}]})
    return out


class AnthropicClient(LLMClient):
    """Streaming client for the Messages API."""

    api_name = "anthropic"

    def build(self, request: ChatRequest) -> tuple[str, dict[str, str], dict[str, Any]]:
        """URL, headers and body of a streaming Messages request."""
        messages = to_anthropic_messages(request.messages)
        if messages:
            last = messages[-1]["content"][-1]
            messages[-1]["content"][-1] = {**last, "cache_control": _CACHE}
        max_tokens = request.max_tokens or min(
            self.model.max_output or DEFAULT_MAX_TOKENS, MAX_TOKENS_CAP
        )
        body: dict[str, Any] = {
            "model": self.model.id,
            "max_tokens": max_tokens,
            "messages": messages,
            "stream": True,
        }
        if request.system:
            body["system"] = [{"type": "text", "text": request.system, "cache_control": _CACHE}]
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
        if request.temperature is not None:
            body["temperature"] = request.temperature
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "anthropic-version": API_VERSION,
        }
        if self._key:
            headers["x-api-key"] = self._key
        base = self.base_url.removesuffix("/v1")
        return f"{base}/v1/messages", headers, body

    async def parse(
        self, events: AsyncIterator[tuple[str, Any]]
    ) -> AsyncGenerator[StreamPart, None]:
        """Translate the event stream; a tool call is yielded when its block closes."""
        blocks: dict[int, dict[str, Any]] = {}
        usage = UsagePart()
        stop: str | None = None
        finished = False
        async for event, data in events:
            if not isinstance(data, dict):
                continue
            kind = data.get("type") or event
            if kind == "content_block_delta":
                delta = data.get("delta") or {}
                dtype = delta.get("type")
                if dtype == "text_delta" and delta.get("text"):
                    yield TextPart(delta["text"])
                elif dtype == "input_json_delta":
                    slot = blocks.get(data.get("index", -1))
                    if slot is not None:
                        slot["json"].append(delta.get("partial_json") or "")
                elif dtype == "thinking_delta" and delta.get("thinking"):
                    yield ThinkingPart(delta["thinking"])
            elif kind == "content_block_start":
                block = data.get("content_block") or {}
                if block.get("type") == "tool_use":
                    blocks[data.get("index", len(blocks))] = {
                        "id": block.get("id"),
                        "name": block.get("name", ""),
                        "input": block.get("input") or None,
                        "json": [],
                    }
            elif kind == "content_block_stop":
                slot = blocks.pop(data.get("index", -1), None)
                if slot is not None:
                    yield _finish_call(slot)
            elif kind == "message_start":
                _add_usage(usage, (data.get("message") or {}).get("usage") or {})
            elif kind == "message_delta":
                stop = (data.get("delta") or {}).get("stop_reason") or stop
                _add_usage(usage, data.get("usage") or {})
            elif kind == "message_stop":
                finished = True
                break
            elif kind == "error":
                if (data.get("error") or {}).get("type") in _RETRYABLE_ERRORS:
                    raise RetryableStreamError(self.error_detail(data) or "error")
                raise self.stream_error(data)
        if not finished:
            raise RetryableStreamError("the stream ended before message_stop")
        for slot in blocks.values():  # a block the server never closed
            yield _finish_call(slot)
        yield usage
        yield DonePart(_STOP.get(stop or "end_turn", "end_turn"))


def _finish_call(slot: dict[str, Any]) -> ToolCallPart:
    # Arguments stream as JSON pieces; a block that sent none carries them whole in `input`.
    return tool_call_part(
        slot["id"] or "call", slot["name"], "".join(slot["json"]) or slot["input"]
    )


def _add_usage(usage: UsagePart, raw: dict[str, Any]) -> None:
    # message_start carries the input side; message_delta the (cumulative) output, and on
    # newer API versions the input side again — so later values replace earlier ones.
    if raw.get("input_tokens") is not None:
        usage.input_tokens = int(raw["input_tokens"])
    if raw.get("cache_read_input_tokens") is not None:
        usage.cache_read_tokens = int(raw["cache_read_input_tokens"])
    if raw.get("cache_creation_input_tokens") is not None:
        usage.cache_write_tokens = int(raw["cache_creation_input_tokens"])
    if raw.get("output_tokens") is not None:
        usage.output_tokens = int(raw["output_tokens"])
