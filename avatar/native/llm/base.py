"""What both streaming clients share: the HTTP client, retries with backoff, error messages.

A request is retried on 408/409/429/5xx/529 and on connection errors, waiting what the
server's `retry-after-ms` / `retry-after` says or an exponential backoff with jitter — but
only until the first part of the answer has been handed out: after that a retry would show
the user the same text twice, so a broken stream is an error instead.

The exchange runs on the event loop (`httpx.AsyncClient`). Abort is plain asyncio: cancelling
the task that consumes `stream()`, or closing the generator, ends the pending connect, read or
retry wait at once and closes the response, and with it the connection the server sees drop.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from avatar.core.errors import ProviderError
from avatar.core.surrogates import loads
from avatar.native.llm.types import (
    ChatRequest,
    DonePart,
    StreamPart,
    TextPart,
    ToolCall,
    ToolCallPart,
    UsagePart,
)
from avatar.policy.secrets import (
    MIN_QUOTED,
    MIN_SECRET_LENGTH,
    mask_values,
    url_password,
    url_shown,
)

if TYPE_CHECKING:
    import httpx

    from avatar.native.models import ModelInfo

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})

RetryNotice = Callable[[str], None]


def import_httpx() -> Any:
    """Import httpx without its command-line module.

    `httpx/__init__` imports `httpx._main` (its CLI), which pulls in rich, click and pygments:
    ~70 ms on a one-shot `avatar chat`, for nothing. A `None` entry in sys.modules makes that
    import fail, and httpx already falls back quietly when its CLI extras are missing.
    """
    if "httpx" not in sys.modules:
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    import httpx

    return httpx


class RetryableStreamError(Exception):
    """The server reported a transient error inside the stream (e.g. `overloaded_error`)."""


class LLMClient(ABC):
    """A streaming chat client for one model."""

    api_name = "llm"

    def __init__(
        self,
        model: ModelInfo,
        env: Mapping[str, str],
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        max_retries: int = 4,
        base_delay: float = 0.5,
        max_delay: float = 30.0,
        max_retry_after: float = 60.0,
        on_retry: RetryNotice | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 300.0,
    ) -> None:
        self.model = model
        self.base_url = model.endpoint(env)
        self._key = model.api_key(env)
        # What errors and notices may never show: the key, and a password in the base URL
        # (a proxy's login in `OPENAI_BASE_URL`); the URL is shown without it.
        password = url_password(self.base_url) or ""
        self._secrets = [key for key in (self._key or "",) if len(key) >= MIN_SECRET_LENGTH]
        self._secrets += [password] if len(password) >= MIN_QUOTED else []
        self._shown_url = url_shown(self.base_url)
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.max_retry_after = max_retry_after
        self.on_retry = on_retry
        self._transport = transport
        self._timeouts = (connect_timeout, read_timeout)
        self._client: httpx.AsyncClient | None = None

    # -- subclass hooks ---------------------------------------------------------------------

    @abstractmethod
    def build(self, request: ChatRequest) -> tuple[str, dict[str, str], dict[str, Any]]:
        """(url, headers, JSON body) of one streaming request."""

    @abstractmethod
    def parse(self, events: AsyncIterator[tuple[str, Any]]) -> AsyncGenerator[StreamPart, None]:
        """The answer's events (see `events`) as `StreamPart`s, ending with a `DonePart`."""

    def error_detail(self, body: Any) -> str | None:
        """The message of an error body as one line: `<code or type>: <message>`.

        Both APIs nest it the same way — OpenAI-compatible servers send
        `{"error": {"message", "type", "code"}}` (some a bare string or `detail`), Anthropic
        `{"type": "error", "error": {"type", "message"}}`.
        """
        if not isinstance(body, dict):
            return None
        err = body.get("error", body)
        if isinstance(err, str):
            return err
        if not isinstance(err, dict):
            return None
        message = err.get("message") or err.get("detail") or ""
        kind = err.get("code") or err.get("type")
        return f"{kind}: {message}" if kind and message else (message or kind or None)

    # -- public -----------------------------------------------------------------------------

    def http(self) -> httpx.AsyncClient:
        """The HTTP client (created on first use)."""
        if self._client is None:
            httpx = import_httpx()
            connect, read = self._timeouts
            self._client = httpx.AsyncClient(
                transport=self._transport,
                timeout=httpx.Timeout(read, connect=connect),
                # Loading the CA bundle costs ~80 ms; a plain-http local server needs none.
                verify=not self.base_url.startswith("http://"),
            )
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def stream(self, request: ChatRequest) -> AsyncGenerator[StreamPart, None]:
        """Stream one model call, retrying transient failures before the first part."""
        httpx = import_httpx()
        url, headers, body = self.build(request)
        client = self.http()
        attempt = 0
        while True:
            started = False
            try:
                async with client.stream("POST", url, json=body, headers=headers) as response:
                    status = response.status_code
                    if status < 400:
                        async with (
                            aclosing(self.events(response)) as events,
                            aclosing(self.parse(events)) as parts,
                        ):
                            async for part in parts:
                                started = True
                                yield part
                        return
                    error = self._http_error(status, await response.aread())
                    if status not in RETRY_STATUS:
                        raise error
                    delay = self._retry_delay(attempt, response.headers, error)
            except (httpx.TransportError, RetryableStreamError) as e:
                if started:
                    raise ProviderError(f"{self._where()}: the stream broke off: {e}") from None
                delay = self._retry_delay(attempt, {}, ProviderError(self._describe(e)))
            attempt += 1
            if self.on_retry is not None:
                self.on_retry(f"{self._where()}: retrying in {delay:.1f} s (attempt {attempt})")
            await asyncio.sleep(delay)

    async def complete(self, request: ChatRequest) -> tuple[str, UsagePart | None]:
        """The whole text answer of a call (used for compaction summaries)."""
        text: list[str] = []
        usage: UsagePart | None = None
        async with aclosing(self.stream(request)) as parts:
            async for part in parts:
                if isinstance(part, TextPart):
                    text.append(part.text)
                elif isinstance(part, UsagePart):
                    usage = part
                elif isinstance(part, DonePart):
                    break
        return "".join(text), usage

    # -- helpers ----------------------------------------------------------------------------

    async def events(self, response: httpx.Response) -> AsyncGenerator[tuple[str, Any], None]:
        """The server-sent events of a 2xx answer as (event name, JSON data).

        Events without data and data that is not JSON (keep-alive comments, junk some proxies
        add) are skipped, except OpenAI's closing `[DONE]`, given as that string. An answer
        that is not an event stream at all (a proxy's page...) is a clear error.
        """
        from httpx_sse import EventSource

        ctype = response.headers.get("content-type", "")
        if "text/event-stream" not in ctype:
            raw = await response.aread()
            try:
                detail = self.error_detail(json.loads(raw))
            except ValueError:
                detail = raw.decode("utf-8", errors="replace")[:300]
            raise ProviderError(
                self.redact(
                    f"{self._where()}: expected an event stream, got {ctype or 'no type'}: {detail}"
                )
            )
        async with aclosing(EventSource(response).aiter_sse()) as stream:
            async for sse in stream:
                data = sse.data
                if not data:
                    continue
                if data.strip() == "[DONE]":
                    yield sse.event, "[DONE]"
                    continue
                try:
                    value = loads(data)
                except ValueError:
                    continue
                yield sse.event, value

    def stream_error(self, body: Any) -> ProviderError:
        """The error a server reported inside the stream, as a `ProviderError`."""
        return ProviderError(self.redact(f"{self._where()}: {self.error_detail(body) or 'error'}"))

    def _where(self) -> str:
        return f"{self.api_name} ({self.model.id} at {self._shown_url})"

    def _describe(self, e: BaseException) -> str:
        name = type(e).__name__
        text = str(e) or name
        return f"{self._where()}: {name}: {self.redact(text)}" if text != name else text

    def redact(self, text: str) -> str:
        """`text` with the API key and the base URL's password (should a server or a
        transport error echo them) masked."""
        return mask_values(text, self._secrets)

    def _http_error(self, status: int, raw: bytes) -> ProviderError:
        detail: str | None = None
        try:
            detail = self.error_detail(json.loads(raw))
        except ValueError:
            text = raw.decode("utf-8", errors="replace").strip()
            detail = text[:300] if text else None
        hint = ""
        if status in (401, 403):
            name = self.model.key_env()
            hint = f" (check {name})" if name else ""
        message = f"{self._where()}: HTTP {status}" + (f": {detail}" if detail else "") + hint
        return ProviderError(self.redact(message))

    def _retry_delay(self, attempt: int, headers: Mapping[str, str], error: ProviderError) -> float:
        """How long to wait before retry `attempt + 1`; raises `error` when out of retries."""
        if attempt >= self.max_retries:
            raise error
        told = retry_after(headers)
        if told is not None:
            if told > self.max_retry_after:
                raise ProviderError(f"{error} (the server asks to retry after {told:.0f} s)")
            return told
        delay = min(self.max_delay, self.base_delay * 2.0**attempt)
        return delay * (1 + random.random() * 0.25)


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from `retry-after-ms` or `retry-after` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        from datetime import UTC, datetime

        when = parsedate_to_datetime(value)
        return max(0.0, (when - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None


def tool_call_part(call_id: str, name: str, raw: str | dict[str, Any] | None) -> ToolCallPart:
    """A finished tool call; arguments that are not a JSON object become its `error`."""
    arguments, error = parse_arguments(raw)
    return ToolCallPart(ToolCall(call_id, name, arguments, error))


def parse_arguments(raw: str | dict[str, Any] | None) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments from the model: (dict, None) or ({}, why they are unusable)."""
    if raw is None or raw == "":
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    try:
        value = loads(raw)
    except ValueError as e:
        return {}, f"the arguments are not valid JSON ({e}): {raw[:200]}"
    if not isinstance(value, dict):
        return {}, f"the arguments must be a JSON object, got: {raw[:200]}"
    return value, None
