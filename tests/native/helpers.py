"""Shared helpers for the native tests: fixture-serving transports, quick model/client setup."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from avatar.native.llm.types import ChatRequest, Message, ToolSpec
from avatar.native.models import ModelInfo

#: A small request with one tool, for the client tests.
REQ = ChatRequest(
    system="be brief",
    messages=[Message("user", "hi")],
    tools=[ToolSpec("read", "Read a file", {"type": "object", "properties": {}})],
)

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> bytes:
    """The bytes of a fixture file (e.g. `openai/text.sse`)."""
    return (FIXTURES / name).read_bytes()


def sse(name: str, status: int = 200, headers: dict[str, str] | None = None) -> httpx.Response:
    """A response streaming a fixture as `text/event-stream`."""
    return httpx.Response(
        status,
        headers={"content-type": "text/event-stream", **(headers or {})},
        content=fixture(name),
    )


def error(name: str, status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    """A JSON error response from a fixture."""
    return httpx.Response(
        status,
        headers={"content-type": "application/json", **(headers or {})},
        content=fixture(name),
    )


@dataclass
class Scripted:
    """A MockTransport handler answering from a list, recording every request body."""

    replies: list[httpx.Response | Callable[[httpx.Request], httpx.Response] | Exception]
    requests: list[httpx.Request] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            return reply(request)
        return reply

    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies sent, in order."""
        return [json.loads(r.content) for r in self.requests]

    def transport(self) -> httpx.MockTransport:
        """A sync httpx transport using this handler (the clients use a sync `httpx.Client`)."""
        return httpx.MockTransport(self)


def openai_model(base_url: str = "http://test.local/v1") -> ModelInfo:
    """An OpenAI-compatible test model."""
    return ModelInfo(
        id="gpt-4o",
        provider="openai",
        api="openai",
        base_url=base_url,
        context_window=128_000,
        cost_input=2.5,
        cost_output=10,
    )


def anthropic_model(base_url: str = "http://test.local") -> ModelInfo:
    """An Anthropic test model."""
    return ModelInfo(
        id="claude-sonnet-4-5",
        provider="anthropic",
        api="anthropic",
        base_url=base_url,
        context_window=200_000,
        max_output=64_000,
        cost_input=3,
        cost_output=15,
    )


# -- bridges against the fake model server ---------------------------------------------------


async def allow_all(request: object) -> bool:
    """A permission handler that allows everything."""
    return True


def native_env(server: Any, api: str) -> dict[str, str]:
    """Environment pointing the native agent at the fake server for one API."""
    import os

    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")}
    if api == "anthropic":
        env["ANTHROPIC_BASE_URL"] = server.url
        env["ANTHROPIC_API_KEY"] = "sk-ant-test-secret-123456"
    else:
        env["OPENAI_BASE_URL"] = server.openai_base_url
        env["OPENAI_API_KEY"] = "sk-test-secret-123456"
    return env


MODELS = {"chat": "gpt-4o", "anthropic": "claude-sonnet-4-5"}


def make_bridge(
    project: Path,
    home: Path,
    server: Any,
    api: str = "chat",
    *,
    permission: Any = allow_all,
    settings: Any = None,
    model: str | None = None,
    events: list[Any] | None = None,
) -> Any:
    """A NativeBridge for `project`, storing sessions under `home`, talking to `server`."""
    from avatar.bridges.base import BridgeContext
    from avatar.bridges.native import NativeBridge
    from avatar.core.config import Settings
    from avatar.providers.registry import BUILTIN

    sink = events if events is not None else []
    ctx = BridgeContext(
        spec=BUILTIN["native"],
        cwd=project,
        settings=settings or Settings(),
        avatar_home=home,
        env=native_env(server, api),
        model=model or MODELS[api],
        permission=permission,
        emit=sink.append,
    )
    return NativeBridge(ctx)


async def run_turn(bridge: Any, prompt: str) -> list[Any]:
    """Send one prompt and collect its events."""
    return [event async for event in bridge.send(prompt)]
