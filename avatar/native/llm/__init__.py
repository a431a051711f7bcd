"""Streaming LLM clients on httpx + httpx-sse: OpenAI-compatible chat completions, Anthropic.

`make_client(model, env)` picks the client for a model's `api`. httpx is imported only when a
client is built, never when this package is imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from avatar.native.llm.base import LLMClient
    from avatar.native.models import ModelInfo


def make_client(model: ModelInfo, env: Mapping[str, str], **kwargs: object) -> LLMClient:
    """The streaming client for `model` (its api, base URL and key from `env`)."""
    if model.api == "anthropic":
        from avatar.native.llm.anthropic import AnthropicClient

        return AnthropicClient(model, env, **kwargs)  # type: ignore[arg-type]
    from avatar.native.llm.openai import OpenAIClient

    return OpenAIClient(model, env, **kwargs)  # type: ignore[arg-type]
