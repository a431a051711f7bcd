"""What both streaming clients share: the HTTP client, retries with backoff, error messages.

A request is retried on 408/409/429/5xx/529 and on connection errors, waiting what the
server's `retry-after-ms` / `retry-after` says or an exponential backoff with jitter — but
only until the first part of the answer has been handed out: after that a retry would show
the user the same text twice, so a broken stream is an error instead. Cancelling the task
that consumes `stream()` closes the connection at once (that is how abort works).

The HTTP exchange itself is blocking: a sync `httpx.Client` request and its SSE parsing run in
one daemon thread per model call, handing parts to the event loop through an `asyncio.Queue`.
`httpx.AsyncClient` would do the same work on the loop, but its transport imports anyio and
its asyncio backend on the first request, ~40-50 ms of a one-shot `avatar chat`.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import sys
import threading
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, cast

from avatar.errors import ProviderError
from avatar.native.llm.types import ChatRequest, DonePart, StreamPart, TextPart, UsagePart

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
        transport: httpx.BaseTransport | None = None,
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
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.max_retry_after = max_retry_after
        self.on_retry = on_retry
        self._transport = transport
        self._timeouts = (connect_timeout, read_timeout)
        self._client: httpx.Client | None = None

    # -- subclass hooks ---------------------------------------------------------------------

    @abstractmethod
    def build(self, request: ChatRequest) -> tuple[str, dict[str, str], dict[str, Any]]:
        """(url, headers, JSON body) of one streaming request."""

    @abstractmethod
    def parse(self, response: httpx.Response) -> Iterator[StreamPart]:
        """The response's SSE stream as `StreamPart`s, ending with a `DonePart`.

        Runs in the call's worker thread, so it may block on the response.
        """

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

    def http(self) -> httpx.Client:
        """The HTTP client (created on first use)."""
        if self._client is None:
            httpx = import_httpx()
            connect, read = self._timeouts
            self._client = httpx.Client(
                transport=self._transport,
                timeout=httpx.Timeout(read, connect=connect),
                # Loading the CA bundle costs ~80 ms; a plain-http local server needs none.
                verify=not self.base_url.startswith("http://"),
                # A connection per call, so an abort can always cut it (see `_Call._trace`).
                # Little is lost: a stream is closed once its last event is parsed, before the
                # body's end is read, so only a call after an HTTP error (a retry) could have
                # reused a connection.
                limits=httpx.Limits(max_keepalive_connections=0),
            )
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            # Right on the loop: it closes sockets and waits for nothing. A worker still busy
            # after an abort ends on its own, at the latest at the read timeout.
            self._client.close()
            self._client = None

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamPart]:
        """Stream one model call, retrying transient failures before the first part."""
        httpx = import_httpx()
        url, headers, body = self.build(request)
        client = self.http()
        attempt = 0
        while True:
            started = False
            delay = 0.0
            call = _Call(self, client, url, headers, body)
            try:
                while True:
                    item = await call.next()
                    if isinstance(item, _Failed):
                        raise item.error
                    if isinstance(item, _Status):
                        error = self._http_error(item.status, item.raw)
                        if item.status not in RETRY_STATUS:
                            raise error
                        delay = self._retry_delay(attempt, item.headers, error)
                        break
                    if item is _END:
                        return
                    started = True
                    yield cast("StreamPart", item)
            except (httpx.TransportError, RetryableStreamError) as e:
                if started:
                    raise ProviderError(f"{self._where()}: the stream broke off: {e}") from None
                delay = self._retry_delay(attempt, {}, ProviderError(self._describe(e)))
            finally:
                # Normal end, error, abort (CancelledError / GeneratorExit at the await or
                # the yield): make sure the worker stops and its connection is cut.
                call.stop()
            attempt += 1
            if self.on_retry is not None:
                self.on_retry(f"{self._where()}: retrying in {delay:.1f} s (attempt {attempt})")
            await asyncio.sleep(delay)

    async def complete(self, request: ChatRequest) -> tuple[str, UsagePart | None]:
        """The whole text answer of a call (used for compaction summaries)."""
        text: list[str] = []
        usage: UsagePart | None = None
        async for part in self.stream(request):
            if isinstance(part, TextPart):
                text.append(part.text)
            elif isinstance(part, UsagePart):
                usage = part
            elif isinstance(part, DonePart):
                break
        return "".join(text), usage

    # -- helpers ----------------------------------------------------------------------------

    def require_event_stream(self, response: httpx.Response) -> None:
        """Raise a clear error when a 2xx answer is not an event stream (a proxy's page...)."""
        ctype = response.headers.get("content-type", "")
        if "text/event-stream" in ctype:
            return
        raw = response.read()
        try:
            detail = self.error_detail(json.loads(raw))
        except ValueError:
            detail = raw.decode("utf-8", errors="replace")[:300]
        raise ProviderError(
            self.redact(
                f"{self._where()}: expected an event stream, got {ctype or 'no type'}: {detail}"
            )
        )

    def _where(self) -> str:
        return f"{self.api_name} ({self.model.id} at {self.base_url})"

    def _describe(self, e: BaseException) -> str:
        name = type(e).__name__
        text = str(e) or name
        return f"{self._where()}: {name}: {self.redact(text)}" if text != name else text

    def redact(self, text: str) -> str:
        """`text` with the API key (should a server echo it) masked."""
        if self._key and len(self._key) >= 8:
            text = text.replace(self._key, "[redacted]")
        return text

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
        delay = min(self.max_delay, self.base_delay * (2**attempt))
        return delay * (1 + random.random() * 0.25)


@dataclass(slots=True)
class _Status:
    """An HTTP error answer (status >= 400), judged on the event loop."""

    status: int
    headers: Mapping[str, str]
    raw: bytes


@dataclass(slots=True)
class _Failed:
    """What the worker raised, to be raised again in the consumer."""

    error: BaseException


_END = object()  # the stream ended normally, after its DonePart


class _Call:
    """One HTTP exchange of a model call, run in a daemon worker thread.

    The worker sends the request, parses the answer and hands each `StreamPart` to the event
    loop through an asyncio queue, then one last item: `_END`, a `_Status` or a `_Failed`.
    `stop()` (called on the loop) makes the worker quit between parts and shuts down the
    socket it reads: a `recv()` blocked on a silent server ends at once and the server sees the
    disconnect. Closing the response or the client from another thread would not do that —
    a blocked `recv()` does not notice its socket being closed, only being shut down.
    """

    def __init__(
        self,
        llm: LLMClient,
        client: httpx.Client,
        url: str,
        headers: dict[str, str],
        body: dict[str, Any],
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._stopped = threading.Event()
        # Guards `_net` so that stop() never shuts down a socket the worker is done with
        # (once its response is closed, that socket may belong to another call).
        self._lock = threading.Lock()
        self._net: Any = None  # the httpcore network stream of this exchange, while in use
        # A daemon thread, not the loop's executor: `asyncio.run` waits for executor threads
        # at exit, and a worker may still be waiting for a slow server after an abort.
        self.thread = threading.Thread(
            target=self._run,
            args=(llm, client, url, headers, body),
            name=f"avatar-llm-{llm.api_name}",
            daemon=True,
        )
        self.thread.start()

    async def next(self) -> object:
        """The next part, or the terminal item."""
        return await self._queue.get()

    def stop(self) -> None:
        """Make the worker quit and cut its connection; returns at once."""
        with self._lock:
            self._stopped.set()
            _shutdown(self._net)
            self._net = None

    def _run(
        self,
        llm: LLMClient,
        client: httpx.Client,
        url: str,
        headers: dict[str, str],
        body: dict[str, Any],
    ) -> None:
        outcome: object = _END
        try:
            with client.stream(
                "POST", url, json=body, headers=headers, extensions={"trace": self._trace}
            ) as response:
                try:
                    self._watch(response.extensions.get("network_stream"))
                    if response.status_code >= 400:
                        outcome = _Status(response.status_code, response.headers, response.read())
                    else:
                        for part in llm.parse(response):
                            if self._stopped.is_set():
                                break
                            self._put(part)
                finally:
                    # Leaving the block closes the response and may return its connection
                    # to the pool: from here on stop() must leave that socket alone.
                    self._watch(None)
        except BaseException as e:  # anything, so the consumer never waits forever
            outcome = _Failed(e)
        if not self._stopped.is_set():  # after a stop, errors are the abort's echo
            self._put(outcome)

    def _put(self, item: object) -> None:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            self._stopped.set()

    def _watch(self, net: Any) -> None:
        """Remember the network stream a stop() must shut down (None: forget it)."""
        with self._lock:
            if self._stopped.is_set():
                _shutdown(net)  # stopped while connecting: cut the new connection at once
            else:
                self._net = net

    def _trace(self, event: str, info: Mapping[str, Any]) -> None:
        # httpcore's trace hook reports each new connection's stream (plain, then TLS), so an
        # abort while waiting for the response headers can cut it too. (A connection taken
        # from the pool would show up only with the headers; the client keeps none.)
        if event.endswith((".connect_tcp.complete", ".start_tls.complete")):
            self._watch(info.get("return_value"))


def _shutdown(net: Any) -> None:
    """Shut down the socket under an httpcore network stream, waking a blocked read."""
    if net is None:
        return
    try:
        sock = net.get_extra_info("socket")
        if isinstance(sock, socket.socket):
            # The plain-socket method even on an SSLSocket: its own `shutdown` also drops the
            # TLS state, which the worker may be using at this very moment.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except (OSError, AttributeError):
        pass  # already closed, or a transport without sockets


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


def parse_arguments(raw: str | dict[str, Any] | None) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments from the model: (dict, None) or ({}, why they are unusable)."""
    if raw is None or raw == "":
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    try:
        value = json.loads(raw)
    except ValueError as e:
        return {}, f"the arguments are not valid JSON ({e}): {raw[:200]}"
    if not isinstance(value, dict):
        return {}, f"the arguments must be a JSON object, got: {raw[:200]}"
    return value, None
