"""OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp server, OpenRouter, ...).

`POST {base}/chat/completions` with `stream: true` and `stream_options.include_usage`. Servers
differ in small ways, all handled here: tool-call arguments split across chunks (or sent
whole, or as an object), missing tool-call ids or indexes, reasoning as `reasoning_content`
or `reasoning`, errors as an HTTP status or as an `error` object inside the stream.
"""

from __future__ import annotations

import json
import secrets
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

_STOP: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def to_openai_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    """The conversation in chat-completions form."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for m in messages:
        if m.role == "user" and m.images:
            parts: list[dict[str, Any]] = [{"type": "text", "text": m.text}] if m.text else []
            parts.extend(
                {"type": "image_url", "image_url": {"url": f"data:{i.mime};base64,{i.base64}"}}
                for i in m.images
            )
            out.append({"role": "user", "content": parts})
        elif m.role == "user":
            out.append({"role": "user", "content": m.text})
        elif m.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": m.text or None}
            if m.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": c.name,
                            "arguments": json.dumps(c.arguments, ensure_ascii=False),
                        },
                    }
                    for c in m.tool_calls
                ]
            elif not m.text:
                continue  # an aborted, empty answer: nothing to send
            out.append(item)
        else:
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.text})
    return out


class OpenAIClient(LLMClient):
    """Streaming client for `/chat/completions`."""

    api_name = "openai"

    def build(self, request: ChatRequest) -> tuple[str, dict[str, str], dict[str, Any]]:
        """URL, headers and body of a streaming chat-completions request."""
        body: dict[str, Any] = {
            "model": self.model.id,
            "messages": to_openai_messages(request.system, request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in request.tools
            ]
        if request.max_tokens is not None:
            # The official API wants the new name (o-series refuse `max_tokens`); most
            # compatible servers only know the old one.
            official = self.base_url.startswith("https://api.openai.com")
            body["max_completion_tokens" if official else "max_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if self._key:
            headers["authorization"] = f"Bearer {self._key}"
        return f"{self.base_url}/chat/completions", headers, body

    async def parse(
        self, events: AsyncIterator[tuple[str, Any]]
    ) -> AsyncGenerator[StreamPart, None]:
        """Translate the SSE chunks; tool calls are yielded whole once the stream ends."""
        calls: dict[int, dict[str, Any]] = {}
        usage: UsagePart | None = None
        finish: str | None = None
        done = False
        async for _, chunk in events:
            if chunk == "[DONE]":
                done = True
                break
            if not isinstance(chunk, dict):
                continue
            if chunk.get("error"):
                raise self.stream_error(chunk)
            if chunk.get("usage"):
                usage = _usage(chunk["usage"])
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                if isinstance(reasoning, str) and reasoning:
                    yield ThinkingPart(reasoning)
                content = delta.get("content")
                if isinstance(content, str) and content:
                    yield TextPart(content)
                for tc in delta.get("tool_calls") or ():
                    _merge_tool_call(calls, tc)
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
        if not done and finish is None:
            raise RetryableStreamError("the stream ended before the answer was complete")
        for index in sorted(calls):
            yield _finish_call(calls[index])
        if usage is not None:
            yield usage
        stop = _STOP.get(finish or "stop", "end_turn")
        if calls and stop == "end_turn":
            stop = "tool_use"  # some servers say "stop" even when they called tools
        yield DonePart(stop)


def _merge_tool_call(calls: dict[int, dict[str, Any]], tc: dict[str, Any]) -> None:
    index = tc.get("index")
    if not isinstance(index, int):
        # No index (some servers): a new id starts a new call, otherwise continue the last.
        known = {c.get("id"): i for i, c in calls.items()}
        if tc.get("id") and tc["id"] in known:
            index = known[tc["id"]]
        elif tc.get("id") or not calls:
            index = len(calls)
        else:
            index = max(calls)
    slot = calls.setdefault(index, {"id": None, "name": "", "args": []})
    if tc.get("id"):
        slot["id"] = tc["id"]
    fn = tc.get("function") or {}
    name = fn.get("name")
    if name and name != slot["name"]:
        slot["name"] += name
    args = fn.get("arguments")
    if isinstance(args, dict):
        slot["args"] = [args]
    elif isinstance(args, str) and args:
        slot["args"].append(args)


def _finish_call(slot: dict[str, Any]) -> ToolCallPart:
    parts = slot["args"]
    raw: str | dict[str, Any] | None
    raw = parts[0] if len(parts) == 1 and isinstance(parts[0], dict) else "".join(parts)
    return tool_call_part(slot["id"] or f"call_{secrets.token_hex(8)}", slot["name"], raw)


def _usage(raw: dict[str, Any]) -> UsagePart:
    prompt = int(raw.get("prompt_tokens") or 0)
    details = raw.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    return UsagePart(
        input_tokens=max(0, prompt - cached),
        output_tokens=int(raw.get("completion_tokens") or 0),
        cache_read_tokens=cached,
    )
