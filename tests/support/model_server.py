"""A scripted, recording fake LLM server for tests and benchmarks (loopback only).

One :class:`FakeModelServer` speaks four wire protocols on ``127.0.0.1:<random port>``:

============  =====================================================  ===========================
API name      endpoints                                              used by
============  =====================================================  ===========================
``anthropic`` ``POST /v1/messages`` (SSE or JSON),                   Claude Code,
              ``POST /v1/messages/count_tokens``                     claude-agent-acp, native
``responses`` ``POST /v1/responses`` (SSE or JSON)                   codex-acp
``chat``      ``POST /v1/chat/completions`` (SSE or JSON)            native (OpenAI-compatible)
``gemini``    ``POST /v1beta/models/<m>:streamGenerateContent``,     Gemini CLI
              ``:generateContent``, ``:countTokens``
============  =====================================================  ===========================

plus ``HEAD /`` and ``GET /`` (200, Claude Code probes them), ``GET /v1/models`` and
``GET /v1beta/models`` (model lists), ``CONNECT`` → 403 and absolute-URI (proxied) requests →
403, both recorded in :attr:`FakeModelServer.proxy_attempts`, so that pointing ``HTTPS_PROXY`` /
``HTTP_PROXY`` at the server reveals every external host a CLI tries to reach. Anything else is a
404 JSON error.

Scripting: each API has a FIFO queue of :class:`Reply` objects (``server.anthropic``,
``server.responses``, ``server.chat``, ``server.gemini``; or ``server.script(api, *replies)``).
A main-conversation request pops the head of its API's queue, else of the shared ``server.any``
queue, else gets :attr:`FakeModelServer.default_reply` (text ``"Hello from the fake LLM."``).
A queue entry may also be a callable ``(RecordedRequest) -> Reply`` for replies that depend on
the request.

Side requests — the CLIs' internal calls that are not the conversation — never consume a queue;
they get a canned answer the CLI accepts. How they are told apart (see :func:`classify_side`):

- Gemini: every non-streaming ``:generateContent`` call. The Gemini CLI sends the conversation
  only through ``:streamGenerateContent``; ``:generateContent`` serves its model router
  (complexity classifier), next-speaker check, loop detection, edit correction, compression.
  The answer is JSON synthesised from the request's ``responseJsonSchema``/``responseSchema``
  (known fields get values the CLI accepts — ``complexity_score`` 1, ``next_speaker`` "user",
  loop confidence 0 —, else first enum value, ``false``, 0, ``"fake"``); plain text otherwise.
- Anthropic: ``count_tokens`` (its own endpoint), and Claude Code's helper calls, recognised by
  structure, never by prompt wording: ``max_tokens == 1`` (quota check, API-key verification,
  model validation) or structured output (``output_config.format`` ``json_schema``: session
  title/name generation, answered with JSON matching the schema).
- Responses and chat completions: nothing is treated as a side request.

``FakeModelServer(side_requests=False)`` turns the classification off (everything is main).

Recording: every request becomes a :class:`RecordedRequest` in :attr:`FakeModelServer.requests`
(thread-safe snapshot), with the parsed JSON body and helpers (:meth:`RecordedRequest.all_text`,
:meth:`RecordedRequest.messages`, …). :meth:`FakeModelServer.wait_for_request` blocks until a
request matching a predicate has arrived (abort and steering tests).

Use it as a context manager (``with FakeModelServer() as server: ...``), through the
``model_server`` pytest fixture, or from the command line for manual checks::

    python -m tests.support.model_server --port 8765 --text "hi there"
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import gzip
import itertools
import json
import re
import socket
import sys
import threading
import time
import uuid
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

__all__ = [
    "APIS",
    "DEFAULT_TEXT",
    "FakeModelServer",
    "Message",
    "Part",
    "RecordedRequest",
    "Reply",
    "ReplyQueue",
    "classify_side",
    "error_body",
]

#: API names accepted by :meth:`FakeModelServer.script` and ``requests_for``.
APIS: tuple[str, ...] = ("anthropic", "responses", "chat", "gemini")
#: The text of the default reply given when a queue is empty.
DEFAULT_TEXT = "Hello from the fake LLM."

ApiName = Literal["anthropic", "responses", "chat", "gemini"]
StopReason = Literal["end_turn", "tool_use", "max_tokens"]


# --------------------------------------------------------------------------------------------
# Replies
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """One piece of a reply: text, thinking, a tool call, or an abrupt disconnect.

    ``chunks`` is how the piece is split into stream deltas (text/thinking), and ``delays`` the
    pause before each chunk (empty = the reply's ``delay``).
    """

    kind: Literal["text", "thinking", "tool_call", "disconnect", "stream_error"]
    chunks: tuple[str, ...] = ()
    name: str = ""
    args: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    signature: str = "fake-signature"
    delays: tuple[float, ...] = ()
    #: Responses API only: the tool namespace of a call (codex groups MCP tools this way).
    namespace: str | None = None

    @property
    def text(self) -> str:
        """The whole text of a text/thinking part."""
        return "".join(self.chunks)

    @property
    def args_json(self) -> str:
        """The tool-call arguments as a compact JSON string."""
        return json.dumps(self.args, separators=(",", ":"), ensure_ascii=False)


def _split_words(text: str) -> tuple[str, ...]:
    """Split text into word-sized stream deltas ("Hello ", "from ", ...), never empty."""
    pieces = re.findall(r"\s*\S+\s*|\s+", text)
    return tuple(pieces) if pieces else (text,)


def _split_json(s: str, pieces: int = 3) -> list[str]:
    """Split a JSON string into ``pieces`` fragments so clients must reassemble arguments."""
    if len(s) < 2:
        return [s]
    size = max(1, -(-len(s) // pieces))
    return [s[i : i + size] for i in range(0, len(s), size)]


@dataclass(frozen=True)
class Reply:
    """What the fake model answers to one request.

    Build with the class methods and combine with ``+``::

        Reply.text("hi")
        Reply.thinking("let me think") + Reply.text("done")
        Reply.text("running it") + Reply.tool_call("bash", {"command": "ls"}, id="call_1")
        Reply.error(429, retry_after=0)
        Reply.slow_text(["a", "b", "c"], delay=0.5)
        Reply.text("partial") + Reply.disconnect()
        Reply.text("partial") + Reply.stream_error("overloaded")
        Reply.text("cut short").with_stop("max_tokens")

    ``stop_reason`` defaults to ``tool_use`` when the reply has a tool call, else ``end_turn``;
    it is mapped to each API's own spelling (``stop``/``tool_calls``/``length``, ``STOP``,
    ``MAX_TOKENS``, Responses ``incomplete``).
    """

    parts: tuple[Part, ...] = ()
    status: int = 200
    #: Error body override (dict → JSON, str → as is); None = the API's own error shape.
    body: Any = None
    message: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    #: Seconds to wait before each stream delta.
    delay: float = 0.0
    #: Seconds to wait before sending the response headers.
    latency: float = 0.0
    stop_reason: StopReason | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    #: Held before the last chunk of the last text part until the test sets it (see `held`).
    hold: threading.Event | None = field(default=None, compare=False)

    # -- constructors -----------------------------------------------------------------------

    @classmethod
    def text(cls, text: str, *, chunks: Iterable[str] | None = None, delay: float = 0.0) -> Reply:
        """A text answer, streamed word by word (or as the given ``chunks``)."""
        pieces = tuple(chunks) if chunks is not None else _split_words(text)
        return cls(parts=(Part("text", chunks=pieces),), delay=delay)

    @classmethod
    def slow_text(cls, chunks: Iterable[str], delay: float = 0.5) -> Reply:
        """A text answer sent as ``chunks`` with ``delay`` seconds before each (abort tests)."""
        pieces = tuple(chunks)
        return cls(parts=(Part("text", chunks=pieces, delays=(delay,) * len(pieces)),))

    @classmethod
    def thinking(cls, text: str, *, signature: str = "fake-signature") -> Reply:
        """A thinking/reasoning block (Anthropic thinking, Responses reasoning summary,
        chat ``reasoning_content``, Gemini ``thought`` part)."""
        return cls(parts=(Part("thinking", chunks=_split_words(text), signature=signature),))

    @classmethod
    def tool_call(
        cls,
        name: str,
        args: Mapping[str, Any] | None = None,
        *,
        id: str | None = None,
        namespace: str | None = None,
    ) -> Reply:
        """A tool/function call; its JSON arguments are streamed in several fragments.

        ``namespace`` (Responses API only) calls a tool inside a ``"type": "namespace"`` tool
        group, as codex exposes MCP tools: ``namespace="mcp__srv", name="tool"``.
        """
        part = Part("tool_call", name=name, args=dict(args or {}), id=id, namespace=namespace)
        return cls(parts=(part,))

    @classmethod
    def disconnect(cls) -> Reply:
        """Drop the connection at this point of the stream (use after other parts)."""
        return cls(parts=(Part("disconnect"),))

    @classmethod
    def stream_error(cls, message: str = "Overloaded (fake).") -> Reply:
        """End the stream with the API's in-stream error (use after other parts).

        Anthropic ``event: error`` (``overloaded_error``), Responses ``response.failed``, a chat
        ``data: {"error": ...}`` chunk, a Gemini ``{"error": ...}`` chunk. A non-streaming
        request gets an HTTP 500 error instead.
        """
        return cls(parts=(Part("stream_error", chunks=(message,)),))

    @classmethod
    def error(
        cls,
        status: int = 500,
        message: str | None = None,
        *,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        retry_after: float | None = None,
    ) -> Reply:
        """An HTTP error in the API's own error shape (or ``body`` verbatim).

        ``retry_after`` (seconds) sets ``retry-after`` and ``retry-after-ms`` headers and, for
        Gemini, a ``google.rpc.RetryInfo`` detail.
        """
        hdrs = dict(headers or {})
        if retry_after is not None:
            hdrs.setdefault("retry-after", _fmt_seconds(retry_after))
            hdrs.setdefault("retry-after-ms", str(round(retry_after * 1000)))
        return cls(status=status, message=message, body=body, headers=hdrs)

    # -- combinators ------------------------------------------------------------------------

    def __add__(self, other: Reply) -> Reply:
        if not isinstance(other, Reply):
            return NotImplemented
        return replace(
            self,
            parts=self.parts + other.parts,
            headers={**self.headers, **other.headers},
            delay=self.delay or other.delay,
            stop_reason=other.stop_reason or self.stop_reason,
        )

    def with_stop(self, stop_reason: StopReason) -> Reply:
        """The same reply with an explicit stop reason (e.g. ``"max_tokens"``)."""
        return replace(self, stop_reason=stop_reason)

    def with_usage(self, input_tokens: int, output_tokens: int) -> Reply:
        """The same reply reporting the given token usage instead of the estimate."""
        return replace(self, input_tokens=input_tokens, output_tokens=output_tokens)

    def held(self, until: threading.Event) -> Reply:
        """The same reply, its last text chunk held back until `until` is set: the turn is
        under way (its first words streamed) for as long as the test needs, whatever the
        machine's load, instead of for a guessed number of seconds."""
        return replace(self, hold=until)

    def with_delay(self, delay: float, *, latency: float = 0.0) -> Reply:
        """The same reply with ``delay`` before each delta and ``latency`` before headers."""
        return replace(self, delay=delay, latency=latency)

    # -- inspection -------------------------------------------------------------------------

    @property
    def is_error(self) -> bool:
        """True for an HTTP error reply."""
        return self.status >= 400

    @property
    def full_text(self) -> str:
        """The concatenated text parts (not thinking)."""
        return "".join(p.text for p in self.parts if p.kind == "text")

    @property
    def tool_calls(self) -> list[Part]:
        """The tool-call parts."""
        return [p for p in self.parts if p.kind == "tool_call"]

    @property
    def effective_stop(self) -> StopReason:
        """The stop reason to report."""
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if self.tool_calls else "end_turn"


def _fmt_seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _as_reply(value: Reply | str) -> Reply:
    return Reply.text(value) if isinstance(value, str) else value


ReplySource = Reply | str | Callable[["RecordedRequest"], Reply]


class ReplyQueue:
    """A thread-safe FIFO of scripted replies for one API (strings become ``Reply.text``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._items: deque[ReplySource] = deque()
        self._lock = threading.Lock()

    def append(self, *replies: ReplySource) -> ReplyQueue:
        """Queue replies at the end; returns the queue for chaining."""
        with self._lock:
            self._items.extend(replies)
        return self

    push = append

    def extend(self, replies: Iterable[ReplySource]) -> ReplyQueue:
        """Queue every reply of an iterable."""
        return self.append(*replies)

    def clear(self) -> None:
        """Drop every queued reply."""
        with self._lock:
            self._items.clear()

    def pop(self) -> ReplySource | None:
        """Take the head of the queue, or None when empty."""
        with self._lock:
            return self._items.popleft() if self._items else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __repr__(self) -> str:
        return f"ReplyQueue({self.name!r}, {len(self)} pending)"


# --------------------------------------------------------------------------------------------
# Recorded requests
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """One conversation item normalised across APIs; ``role`` is system/user/assistant/tool."""

    role: str
    text: str


@dataclass
class RecordedRequest:
    """One request the server received, with its parsed body and what was answered."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    raw: bytes
    #: ``anthropic`` | ``responses`` | ``chat`` | ``gemini`` | None (probe, models, proxy, 404).
    api: str | None = None
    #: ``main`` (conversation), ``side`` (internal CLI call), ``count_tokens``, ``probe``,
    #: ``models``, ``proxy`` or ``unknown``.
    kind: str = "unknown"
    #: Why a request was taken as a side request (e.g. ``"gemini-generateContent"``).
    side_reason: str | None = None
    reply: Reply | None = None
    status: int | None = None
    time: float = field(default_factory=time.time)
    #: True when the client closed the connection before the reply was complete.
    disconnected: bool = False
    finished: threading.Event = field(default_factory=threading.Event, repr=False)

    # -- convenience ------------------------------------------------------------------------

    @property
    def is_main(self) -> bool:
        """True for a main-conversation request (one that consumed or could consume a reply)."""
        return self.kind == "main"

    @property
    def model(self) -> str | None:
        """The model asked for (body ``model`` or the Gemini path segment)."""
        if isinstance(self.body, dict) and isinstance(self.body.get("model"), str):
            return self.body["model"]
        m = re.search(r"/models/([^/:]+)", self.path)
        return m.group(1) if m else None

    @property
    def stream(self) -> bool:
        """Whether a streaming answer was asked for."""
        if self.api == "gemini":
            return "streamGenerateContent" in self.path
        return isinstance(self.body, dict) and bool(self.body.get("stream"))

    def json(self) -> Any:
        """The parsed JSON body (None if the body was not JSON)."""
        return self.body

    def messages(self) -> list[Message]:
        """The conversation carried by the request, normalised (system prompt first)."""
        return _extract_messages(self.api, self.body)

    def system_text(self) -> str:
        """The system prompt/instructions as one string."""
        return "\n".join(m.text for m in self.messages() if m.role == "system")

    def conversation_texts(self) -> list[str]:
        """The text of each non-system message, tool calls and tool results included."""
        return [m.text for m in self.messages() if m.role != "system"]

    def all_text(self) -> str:
        """Everything the model was shown (system prompt + conversation) as one string."""
        return "\n".join(m.text for m in self.messages())

    def last_user_text(self) -> str:
        """The text of the last user message ("" if none)."""
        users = [m.text for m in self.messages() if m.role == "user"]
        return users[-1] if users else ""

    def tool_names(self) -> list[str]:
        """Names of the tools/functions offered to the model."""
        return _extract_tool_names(self.api, self.body)

    def images(self) -> list[tuple[str, bytes]]:
        """Every image the request carries, as (MIME type, bytes), in any API's form:
        Anthropic ``image`` blocks (base64 source), chat ``image_url`` and Responses
        ``input_image`` data URLs, Gemini ``inlineData``."""
        found: list[tuple[str, bytes]] = []
        _find_images(self.body, found)
        return found

    def wait_finished(self, timeout: float = 10.0) -> bool:
        """Block until the server has finished answering this request."""
        return self.finished.wait(timeout)


def _data_url(url: Any) -> tuple[str, bytes] | None:
    match = (
        re.fullmatch(r"data:([\w/+.-]+);base64,(.*)", url, re.S) if isinstance(url, str) else None
    )
    return (match.group(1), base64.b64decode(match.group(2))) if match else None


def _find_images(node: Any, found: list[tuple[str, bytes]]) -> None:
    if isinstance(node, list):
        for item in node:
            _find_images(item, found)
        return
    if not isinstance(node, dict):
        return
    source = node.get("source")
    url = node.get("image_url")
    inline = node.get("inlineData") or node.get("inline_data")
    if node.get("type") == "image" and isinstance(source, dict) and source.get("data"):
        found.append((str(source.get("media_type")), base64.b64decode(source["data"])))
    elif node.get("type") in ("image_url", "input_image") and url is not None:
        image = _data_url(url.get("url") if isinstance(url, dict) else url)
        if image:
            found.append(image)
    elif isinstance(inline, dict) and inline.get("data"):
        found.append(
            (
                str(inline.get("mimeType") or inline.get("mime_type")),
                base64.b64decode(inline["data"]),
            )
        )
    else:
        for value in node.values():
            _find_images(value, found)


def _block_text(block: Any) -> str:
    """Text of one content block of any of the APIs (text, tool use/result, function call…)."""
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return ""
    t = block.get("type")
    if "text" in block and isinstance(block["text"], str):
        return block["text"]
    if t == "thinking":
        return block.get("thinking", "")
    if t == "tool_use":
        return (
            f"[tool_use {block.get('name')} {json.dumps(block.get('input'), ensure_ascii=False)}]"
        )
    if t == "tool_result":
        return _content_text(block.get("content"))
    if "functionCall" in block:
        fc = block["functionCall"]
        return f"[functionCall {fc.get('name')} {json.dumps(fc.get('args'), ensure_ascii=False)}]"
    if "functionResponse" in block:
        fr = block["functionResponse"]
        response = json.dumps(fr.get("response"), ensure_ascii=False)
        return f"[functionResponse {fr.get('name')} {response}]"
    return ""


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(s for s in (_block_text(b) for b in content) if s)
    if isinstance(content, dict):
        return _block_text(content)
    return str(content)


def _norm_role(role: Any) -> str:
    role = str(role or "user")
    return {"developer": "system", "model": "assistant", "function": "tool"}.get(role, role)


def _extract_messages(api: str | None, body: Any) -> list[Message]:
    if not isinstance(body, dict):
        return []
    out: list[Message] = []
    if api == "anthropic":
        if body.get("system"):
            out.append(Message("system", _content_text(body["system"])))
        for m in body.get("messages") or []:
            content = m.get("content")
            role = _norm_role(m.get("role"))
            # A user turn made only of tool results is the tool's answer.
            if (
                isinstance(content, list)
                and content
                and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
            ):
                role = "tool"
            out.append(Message(role, _content_text(content)))
    elif api == "responses":
        if body.get("instructions"):
            out.append(Message("system", str(body["instructions"])))
        items = body.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        for item in items or []:
            if not isinstance(item, dict):
                continue
            t = item.get("type", "message")
            if t == "message":
                out.append(
                    Message(_norm_role(item.get("role")), _content_text(item.get("content")))
                )
            elif t in ("function_call", "custom_tool_call", "local_shell_call"):
                args = item.get("arguments", item.get("input", item.get("action", "")))
                if not isinstance(args, str):
                    args = json.dumps(args, ensure_ascii=False)
                out.append(Message("assistant", f"[{t} {item.get('name', '')} {args}]"))
            elif t in ("function_call_output", "custom_tool_call_output"):
                output = item.get("output")
                if isinstance(output, dict):
                    output = output.get("content", json.dumps(output, ensure_ascii=False))
                out.append(Message("tool", _content_text(output)))
            elif t == "reasoning":
                summary = "\n".join(_block_text(s) for s in item.get("summary") or [])
                if summary:
                    out.append(Message("assistant", summary))
    elif api == "chat":
        for m in body.get("messages") or []:
            text = _content_text(m.get("content"))
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                text += f"\n[tool_call {fn.get('name')} {fn.get('arguments')}]"
            out.append(Message(_norm_role(m.get("role")), text.strip("\n")))
    elif api == "gemini":
        si = body.get("systemInstruction") or body.get("system_instruction")
        if si:
            out.append(
                Message("system", _content_text(si.get("parts") if isinstance(si, dict) else si))
            )
        for c in body.get("contents") or []:
            parts = c.get("parts") or []
            role = _norm_role(c.get("role"))
            if parts and all(isinstance(p, dict) and "functionResponse" in p for p in parts):
                role = "tool"
            out.append(Message(role, _content_text(parts)))
    return out


def _extract_tool_names(api: str | None, body: Any) -> list[str]:
    if not isinstance(body, dict):
        return []
    names: list[str] = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if api == "gemini":
            for fd in tool.get("functionDeclarations") or tool.get("function_declarations") or []:
                names.append(fd.get("name", ""))
        elif isinstance(tool.get("function"), dict):
            names.append(tool["function"].get("name", ""))
        elif "name" in tool:
            names.append(tool["name"])
        elif "type" in tool:
            names.append(tool["type"])
    return names


# --------------------------------------------------------------------------------------------
# Side requests
# --------------------------------------------------------------------------------------------


def _anthropic_output_schema(body: dict[str, Any]) -> Any:
    """The JSON schema of an Anthropic structured-output request, if any."""
    fmt = (body.get("output_config") or {}).get("format") or body.get("output_format") or {}
    return fmt.get("schema") if isinstance(fmt, dict) and fmt.get("type") == "json_schema" else None


def _responses_output_schema(body: dict[str, Any]) -> Any:
    """The JSON schema of a Responses-API structured-output request, if any."""
    fmt = (body.get("text") or {}).get("format") or {}
    return fmt.get("schema") if isinstance(fmt, dict) and fmt.get("type") == "json_schema" else None


def classify_side(api: str, path: str, body: Any) -> str | None:
    """Return why a request is a CLI-internal side request, or None for the conversation.

    Only structural markers are used, never prompt wording (a native-agent compaction request
    that asks for a summary must still reach the scripted queue):

    - ``gemini-generateContent``: a Gemini ``:generateContent`` call (the conversation always
      streams);
    - ``claude-probe``: Anthropic ``max_tokens == 1`` (Claude Code's quota check, API-key
      verification, model validation);
    - ``claude-structured``: Anthropic structured output (``output_config.format`` of type
      ``json_schema``) — Claude Code's session-title and name generation. Caveat: ``claude -p
      --json-schema`` would make the main request look like this too;
    - ``codex-structured``: Responses structured output (``text.format`` of type
      ``json_schema``) — codex-acp 2.x's thread-title generation.
    """
    if api == "gemini":
        return "gemini-generateContent" if path.endswith(":generateContent") else None
    if api == "anthropic" and isinstance(body, dict):
        if body.get("max_tokens") == 1:
            return "claude-probe"
        if _anthropic_output_schema(body) is not None:
            return "claude-structured"
    if api == "responses" and isinstance(body, dict) and _responses_output_schema(body):
        return "codex-structured"
    return None


# Fields of the Gemini CLI's internal JSON tasks whose value matters: a router complexity score
# must be 1..100 (checked by zod, not stated in the schema), the loop detector must not see a
# loop, the next-speaker check must hand the turn back to the user.
_SCHEMA_FIELD_VALUES: dict[str, Any] = {
    "complexity_score": 1,
    "model_choice": "flash",
    "next_speaker": "user",
    "unproductive_state_confidence": 0.0,
    "noChangesRequired": False,
    # Claude Code's session title / name generation.
    "title": "Fake session title",
    "name": "fake-session",
}


def _schema_example(schema: Any, depth: int = 0, name: str | None = None) -> Any:
    """A small value satisfying a JSON schema (or Gemini OpenAPI-style schema)."""
    if name in _SCHEMA_FIELD_VALUES:
        return _SCHEMA_FIELD_VALUES[name]
    if not isinstance(schema, dict) or depth > 8:
        return "fake"
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return _schema_example(schema[key][0], depth + 1)
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if str(x).lower() != "null"), "string")
    t = str(t or ("object" if "properties" in schema else "string")).lower()
    if t == "object":
        props = schema.get("properties") or {}
        return {k: _schema_example(v, depth + 1, k) for k, v in props.items()}
    if t == "array":
        n = int(schema.get("minItems") or 0)
        return [_schema_example(schema.get("items"), depth + 1) for _ in range(n)]
    if t in ("integer", "number"):
        return schema.get("minimum", 0)
    if t == "boolean":
        return False
    return "fake"


def _side_reply(api: str, reason: str, body: Any, server: FakeModelServer) -> Reply:
    if reason in server.side_replies:
        return server.side_replies[reason]
    if api == "gemini" and isinstance(body, dict):
        cfg = body.get("generationConfig") or body.get("generation_config") or {}
        schema = cfg.get("responseJsonSchema") or cfg.get("responseSchema")
        if schema:
            return Reply.text(json.dumps(_schema_example(schema)), chunks=None)
        if cfg.get("responseMimeType") == "application/json":
            return Reply.text("{}")
        return Reply.text(server.side_text)
    if reason == "claude-probe":
        return Reply.text("ok").with_stop("max_tokens")
    if reason == "claude-structured" and isinstance(body, dict):
        return Reply.text(json.dumps(_schema_example(_anthropic_output_schema(body))))
    if reason == "codex-structured" and isinstance(body, dict):
        return Reply.text(json.dumps(_schema_example(_responses_output_schema(body))))
    return Reply.text(server.side_text)


# --------------------------------------------------------------------------------------------
# Encoding replies per API
# --------------------------------------------------------------------------------------------


#: Parts that end a reply abruptly instead of contributing content.
_CUTS = ("disconnect", "stream_error")


class _Disconnect:
    """Marker in a frame stream: drop the connection here."""


@dataclass
class _Frame:
    data: bytes
    #: Seconds to wait before the frame, or an event to wait for (`Reply.held`).
    delay: float | threading.Event = 0.0


_Stream = Iterator["_Frame | _Disconnect"]


def _sse(event: str | None, data: Any) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    # backslashreplace: a lone surrogate (only ever inside a JSON string) goes out as its JSON
    # escape `\ud800`, as a server that escapes non-ASCII would send it.
    return f"{head}data: {payload}\n\n".encode("utf-8", "backslashreplace")


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


@dataclass
class _Ctx:
    """Everything an encoder needs about one request/reply pair."""

    request: RecordedRequest
    reply: Reply
    ids: Callable[[str], str]

    @property
    def model(self) -> str:
        return self.request.model or "fake-model"

    @property
    def input_tokens(self) -> int:
        if self.reply.input_tokens is not None:
            return self.reply.input_tokens
        return _estimate_tokens(self.request.all_text())

    @property
    def output_tokens(self) -> int:
        if self.reply.output_tokens is not None:
            return self.reply.output_tokens
        text = "".join(p.text or p.args_json for p in self.reply.parts)
        return _estimate_tokens(text)

    def delay_for(self, part: Part, i: int) -> float | threading.Event:
        hold = self.reply.hold
        if hold is not None and i == len(part.chunks) - 1:
            texts = [p for p in self.reply.parts if p.kind == "text"]
            if texts and part is texts[-1]:
                return hold
        return part.delays[i] if i < len(part.delays) else self.reply.delay


def _tool_id(ctx: _Ctx, part: Part, prefix: str) -> str:
    return part.id or ctx.ids(prefix)


# -- Anthropic Messages ----------------------------------------------------------------------

_ANTHROPIC_STOP = {"end_turn": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens"}


def _anthropic_usage(ctx: _Ctx, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": ctx.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _anthropic_blocks(ctx: _Ctx) -> list[tuple[Part, dict[str, Any]]]:
    blocks = []
    for part in ctx.reply.parts:
        if part.kind == "text":
            blocks.append((part, {"type": "text", "text": part.text}))
        elif part.kind == "thinking":
            blocks.append(
                (part, {"type": "thinking", "thinking": part.text, "signature": part.signature})
            )
        elif part.kind == "tool_call":
            block = {
                "type": "tool_use",
                "id": _tool_id(ctx, part, "toolu_fake_"),
                "name": part.name,
            }
            blocks.append((part, {**block, "input": dict(part.args)}))
        else:
            blocks.append((part, {}))
    return blocks


def _anthropic_json(ctx: _Ctx) -> dict[str, Any]:
    return {
        "id": ctx.ids("msg_fake_"),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": [b for p, b in _anthropic_blocks(ctx) if p.kind not in _CUTS],
        "stop_reason": _ANTHROPIC_STOP[ctx.reply.effective_stop],
        "stop_sequence": None,
        "usage": _anthropic_usage(ctx, ctx.output_tokens),
    }


def _anthropic_stream(ctx: _Ctx) -> _Stream:
    msg = {
        "id": ctx.ids("msg_fake_"),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _anthropic_usage(ctx, 1),
    }
    yield _Frame(_sse("message_start", {"type": "message_start", "message": msg}))
    yield _Frame(_sse("ping", {"type": "ping"}))
    for index, (part, block) in enumerate(_anthropic_blocks(ctx)):
        if part.kind == "disconnect":
            yield _Disconnect()
            return
        if part.kind == "stream_error":
            err = {"type": "overloaded_error", "message": part.text}
            yield _Frame(_sse("error", {"type": "error", "error": err}))
            return
        if part.kind == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": c} for c in part.chunks]
        elif part.kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": c} for c in part.chunks]
            deltas.append({"type": "signature_delta", "signature": part.signature})
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": c} for c in _split_json(part.args_json)
            ]
        yield _Frame(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        for i, delta in enumerate(deltas):
            yield _Frame(
                _sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                ),
                ctx.delay_for(part, i),
            )
        yield _Frame(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    yield _Frame(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": _ANTHROPIC_STOP[ctx.reply.effective_stop],
                    "stop_sequence": None,
                },
                "usage": _anthropic_usage(ctx, ctx.output_tokens),
            },
        )
    )
    yield _Frame(_sse("message_stop", {"type": "message_stop"}))


# -- OpenAI Responses ------------------------------------------------------------------------


def _responses_usage(ctx: _Ctx) -> dict[str, Any]:
    return {
        "input_tokens": ctx.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": ctx.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": ctx.input_tokens + ctx.output_tokens,
    }


def _responses_items(ctx: _Ctx) -> list[tuple[Part, dict[str, Any]]]:
    items = []
    for part in ctx.reply.parts:
        if part.kind == "text":
            item = {
                "id": ctx.ids("msg_fake_"),
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": part.text, "annotations": []}],
            }
        elif part.kind == "thinking":
            item = {
                "id": ctx.ids("rs_fake_"),
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": part.text}],
            }
        elif part.kind == "tool_call":
            item = {
                "id": ctx.ids("fc_fake_"),
                "type": "function_call",
                "status": "completed",
                "call_id": _tool_id(ctx, part, "call_fake_"),
                "name": part.name,
                "arguments": part.args_json,
            }
            if part.namespace:
                item["namespace"] = part.namespace
        else:
            item = {}
        items.append((part, item))
    return items


def _responses_object(ctx: _Ctx, rid: str, status: str, output: list[dict[str, Any]]) -> dict:
    done = status != "in_progress"
    return {
        "id": rid,
        "object": "response",
        "created_at": int(ctx.request.time),
        "status": status,
        "error": None,
        "incomplete_details": ({"reason": "max_output_tokens"} if status == "incomplete" else None),
        "instructions": None,
        "model": ctx.model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": _responses_usage(ctx) if done else None,
    }


def _responses_final_status(ctx: _Ctx) -> str:
    return "incomplete" if ctx.reply.effective_stop == "max_tokens" else "completed"


def _responses_json(ctx: _Ctx) -> dict[str, Any]:
    items = [i for p, i in _responses_items(ctx) if p.kind not in _CUTS]
    return _responses_object(ctx, ctx.ids("resp_fake_"), _responses_final_status(ctx), items)


def _responses_stream(ctx: _Ctx) -> _Stream:
    seq = itertools.count()
    rid = ctx.ids("resp_fake_")

    def ev(type_: str, **fields: Any) -> bytes:
        return _sse(type_, {"type": type_, "sequence_number": next(seq), **fields})

    yield _Frame(ev("response.created", response=_responses_object(ctx, rid, "in_progress", [])))
    yield _Frame(
        ev("response.in_progress", response=_responses_object(ctx, rid, "in_progress", []))
    )
    done_items: list[dict[str, Any]] = []
    for oi, (part, item) in enumerate(_responses_items(ctx)):
        if part.kind == "disconnect":
            yield _Disconnect()
            return
        if part.kind == "stream_error":
            failed = _responses_object(ctx, rid, "failed", done_items)
            failed["error"] = {"code": "server_error", "message": part.text}
            yield _Frame(ev("response.failed", response=failed))
            return
        iid = item["id"]
        if part.kind == "text":
            start = {**item, "status": "in_progress", "content": []}
            yield _Frame(ev("response.output_item.added", output_index=oi, item=start))
            empty = {"type": "output_text", "text": "", "annotations": []}
            common = {"item_id": iid, "output_index": oi, "content_index": 0}
            yield _Frame(ev("response.content_part.added", **common, part=empty))
            for i, chunk in enumerate(part.chunks):
                yield _Frame(
                    ev("response.output_text.delta", **common, delta=chunk, logprobs=[]),
                    ctx.delay_for(part, i),
                )
            yield _Frame(ev("response.output_text.done", **common, text=part.text, logprobs=[]))
            yield _Frame(ev("response.content_part.done", **common, part=item["content"][0]))
        elif part.kind == "thinking":
            yield _Frame(
                ev("response.output_item.added", output_index=oi, item={**item, "summary": []})
            )
            common = {"item_id": iid, "output_index": oi, "summary_index": 0}
            empty = {"type": "summary_text", "text": ""}
            yield _Frame(ev("response.reasoning_summary_part.added", **common, part=empty))
            for i, chunk in enumerate(part.chunks):
                yield _Frame(
                    ev("response.reasoning_summary_text.delta", **common, delta=chunk),
                    ctx.delay_for(part, i),
                )
            yield _Frame(ev("response.reasoning_summary_text.done", **common, text=part.text))
            yield _Frame(
                ev("response.reasoning_summary_part.done", **common, part=item["summary"][0])
            )
        else:
            start = {**item, "status": "in_progress", "arguments": ""}
            yield _Frame(ev("response.output_item.added", output_index=oi, item=start))
            for i, chunk in enumerate(_split_json(part.args_json)):
                yield _Frame(
                    ev(
                        "response.function_call_arguments.delta",
                        item_id=iid,
                        output_index=oi,
                        delta=chunk,
                    ),
                    ctx.delay_for(part, i),
                )
            yield _Frame(
                ev(
                    "response.function_call_arguments.done",
                    item_id=iid,
                    output_index=oi,
                    arguments=part.args_json,
                )
            )
        yield _Frame(ev("response.output_item.done", output_index=oi, item=item))
        done_items.append(item)
    status = _responses_final_status(ctx)
    yield _Frame(ev(f"response.{status}", response=_responses_object(ctx, rid, status, done_items)))


# -- OpenAI chat completions -----------------------------------------------------------------

_CHAT_STOP = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def _chat_usage(ctx: _Ctx) -> dict[str, Any]:
    return {
        "prompt_tokens": ctx.input_tokens,
        "completion_tokens": ctx.output_tokens,
        "total_tokens": ctx.input_tokens + ctx.output_tokens,
    }


def _chat_json(ctx: _Ctx) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": ctx.reply.full_text or None}
    thinking = "".join(p.text for p in ctx.reply.parts if p.kind == "thinking")
    if thinking:
        message["reasoning_content"] = thinking
    calls = [
        {
            "id": _tool_id(ctx, p, "call_fake_"),
            "type": "function",
            "function": {"name": p.name, "arguments": p.args_json},
        }
        for p in ctx.reply.tool_calls
    ]
    if calls:
        message["tool_calls"] = calls
    return {
        "id": ctx.ids("chatcmpl-fake-"),
        "object": "chat.completion",
        "created": int(ctx.request.time),
        "model": ctx.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _CHAT_STOP[ctx.reply.effective_stop],
            }
        ],
        "usage": _chat_usage(ctx),
    }


def _chat_stream(ctx: _Ctx) -> _Stream:
    cid = ctx.ids("chatcmpl-fake-")
    body = ctx.request.body if isinstance(ctx.request.body, dict) else {}
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        obj = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": int(ctx.request.time),
            "model": ctx.model,
            "system_fingerprint": None,
            "choices": [choice],
            **extra,
        }
        if include_usage:
            obj.setdefault("usage", None)
        return _sse(None, obj)

    yield _Frame(chunk({"role": "assistant", "content": ""}))
    tool_index = 0
    for part in ctx.reply.parts:
        if part.kind == "disconnect":
            yield _Disconnect()
            return
        if part.kind == "stream_error":
            yield _Frame(_sse(None, error_body("chat", 500, part.text)))
            return
        if part.kind == "text":
            for i, c in enumerate(part.chunks):
                yield _Frame(chunk({"content": c}), ctx.delay_for(part, i))
        elif part.kind == "thinking":
            for i, c in enumerate(part.chunks):
                yield _Frame(chunk({"reasoning_content": c}), ctx.delay_for(part, i))
        else:
            first = {
                "index": tool_index,
                "id": _tool_id(ctx, part, "call_fake_"),
                "type": "function",
                "function": {"name": part.name, "arguments": ""},
            }
            yield _Frame(chunk({"tool_calls": [first]}))
            for i, piece in enumerate(_split_json(part.args_json)):
                delta = {"tool_calls": [{"index": tool_index, "function": {"arguments": piece}}]}
                yield _Frame(chunk(delta), ctx.delay_for(part, i))
            tool_index += 1
    yield _Frame(chunk({}, _CHAT_STOP[ctx.reply.effective_stop]))
    if include_usage:
        yield _Frame(
            _sse(
                None,
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": int(ctx.request.time),
                    "model": ctx.model,
                    "system_fingerprint": None,
                    "choices": [],
                    "usage": _chat_usage(ctx),
                },
            )
        )
    yield _Frame(b"data: [DONE]\n\n")


# -- Gemini ----------------------------------------------------------------------------------

_GEMINI_STOP = {"end_turn": "STOP", "tool_use": "STOP", "max_tokens": "MAX_TOKENS"}


def _gemini_usage(ctx: _Ctx, output_tokens: int) -> dict[str, Any]:
    return {
        "promptTokenCount": ctx.input_tokens,
        "candidatesTokenCount": output_tokens,
        "totalTokenCount": ctx.input_tokens + output_tokens,
    }


def _gemini_part(part: Part, text: str | None = None) -> dict[str, Any]:
    if part.kind == "text":
        return {"text": part.text if text is None else text}
    if part.kind == "thinking":
        return {"text": part.text if text is None else text, "thought": True}
    call: dict[str, Any] = {"name": part.name, "args": dict(part.args)}
    if part.id:
        call["id"] = part.id
    return {"functionCall": call}


def _gemini_response(
    ctx: _Ctx, rid: str, parts: list[dict[str, Any]], finish: str | None, out_tokens: int
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {
        "candidates": [candidate],
        "usageMetadata": _gemini_usage(ctx, out_tokens),
        "modelVersion": ctx.model,
        "responseId": rid,
    }


def _gemini_json(ctx: _Ctx) -> dict[str, Any]:
    parts = [_gemini_part(p) for p in ctx.reply.parts if p.kind not in _CUTS]
    return _gemini_response(
        ctx, ctx.ids("fake-"), parts, _GEMINI_STOP[ctx.reply.effective_stop], ctx.output_tokens
    )


def _gemini_stream(ctx: _Ctx) -> _Stream:
    rid = ctx.ids("fake-")
    emitted = 0
    pieces: list[tuple[Part, dict[str, Any], float | threading.Event]] = []
    for part in ctx.reply.parts:
        if part.kind in ("text", "thinking"):
            for i, c in enumerate(part.chunks):
                pieces.append((part, _gemini_part(part, c), ctx.delay_for(part, i)))
        else:
            # A functionCall arrives whole in Gemini's stream; it cannot be split.
            pieces.append((part, _gemini_part(part) if part.kind == "tool_call" else {}, 0.0))
    finish = _GEMINI_STOP[ctx.reply.effective_stop]
    for n, (part, gpart, delay) in enumerate(pieces):
        if part.kind == "disconnect":
            yield _Disconnect()
            return
        if part.kind == "stream_error":
            yield _Frame(_sse(None, error_body("gemini", 500, part.text)))
            return
        emitted += _estimate_tokens(json.dumps(gpart))
        last = n == len(pieces) - 1
        out = ctx.output_tokens if last else min(emitted, ctx.output_tokens)
        yield _Frame(
            _sse(None, _gemini_response(ctx, rid, [gpart], finish if last else None, out)), delay
        )
    if not pieces:
        yield _Frame(_sse(None, _gemini_response(ctx, rid, [{"text": ""}], finish, 0)))


# -- errors ----------------------------------------------------------------------------------

_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_OPENAI_ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}
_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_DEFAULT_MESSAGES = {
    400: "Invalid request (fake).",
    401: "Invalid API key (fake).",
    403: "Permission denied (fake).",
    404: "Not found (fake).",
    429: "Rate limit exceeded (fake).",
    500: "Internal server error (fake).",
    503: "Service unavailable (fake).",
    529: "Overloaded (fake).",
}


def error_body(
    api: str | None, status: int, message: str | None = None, *, retry_after: str | None = None
) -> dict[str, Any]:
    """The JSON error body the real ``api`` returns for an HTTP ``status``."""
    message = message or _DEFAULT_MESSAGES.get(status, f"HTTP {status} (fake).")
    if api in ("responses", "chat"):
        type_, code = _OPENAI_ERRORS.get(
            status, ("server_error" if status >= 500 else "invalid_request_error", None)
        )
        return {"error": {"message": message, "type": type_, "param": None, "code": code}}
    if api == "gemini":
        err: dict[str, Any] = {
            "code": status,
            "message": message,
            "status": _GOOGLE_STATUS.get(
                status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION"
            ),
        }
        if retry_after is not None:
            err["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.RetryInfo",
                    "retryDelay": f"{retry_after}s",
                }
            ]
        return {"error": err}
    type_ = _ANTHROPIC_ERRORS.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {
        "type": "error",
        "error": {"type": type_, "message": message},
        "request_id": f"req_fake_{uuid.uuid4().hex[:16]}",
    }


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------

_ENCODERS: dict[str, tuple[Callable[[_Ctx], _Stream], Callable[[_Ctx], dict[str, Any]]]] = {
    "anthropic": (_anthropic_stream, _anthropic_json),
    "responses": (_responses_stream, _responses_json),
    "chat": (_chat_stream, _chat_json),
    "gemini": (_gemini_stream, _gemini_json),
}

_ROUTES: list[tuple[str, re.Pattern[str], str, str]] = [
    # (method, path regex, api, kind)
    ("POST", re.compile(r"^(?:/v1)?/messages/count_tokens$"), "anthropic", "count_tokens"),
    ("POST", re.compile(r"^(?:/v1)?/messages$"), "anthropic", "main"),
    ("POST", re.compile(r"^(?:/v1)?/responses$"), "responses", "main"),
    ("POST", re.compile(r"^(?:/v1)?/chat/completions$"), "chat", "main"),
    (
        "POST",
        re.compile(r"^/v1(?:beta|alpha)?/models/[^/:]+:(?:streamGenerateContent|generateContent)$"),
        "gemini",
        "main",
    ),
    (
        "POST",
        re.compile(r"^/v1(?:beta|alpha)?/models/[^/:]+:countTokens$"),
        "gemini",
        "count_tokens",
    ),
]


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # Many CLIs open several connections at once; the default backlog of 5 can reset them.
    request_queue_size = 64

    def __init__(self, addr: tuple[str, int], fake: FakeModelServer) -> None:
        self.fake = fake
        super().__init__(addr, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        self.fake._track(request, add=True)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self.fake._track(request, add=False)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client dropping the connection mid-stream is normal in abort tests: stay quiet.
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeModelServer/1"
    # Idle keep-alive connections are closed after this many seconds.
    timeout = 30
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.fake.verbose:
            sys.stderr.write(f"[fake-llm] {self.address_string()} {format % args}\n")

    def do_GET(self) -> None:
        self.server.fake._handle(self)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_GET

    def do_CONNECT(self) -> None:
        self.server.fake._handle(self)


class FakeModelServer:
    """A scripted, recording fake LLM endpoint on ``127.0.0.1`` (see the module docstring).

    Example::

        with FakeModelServer() as server:
            server.script("anthropic", Reply.text("hi"), Reply.tool_call("Bash", {"command": "ls"}))
            ...  # point a client at server.url
            assert "hello" in server.requests_for("anthropic")[0].all_text()
    """

    def __init__(
        self,
        *,
        default_text: str = DEFAULT_TEXT,
        port: int = 0,
        verbose: bool = False,
        side_requests: bool = True,
    ) -> None:
        """Create (not start) a server; ``port=0`` picks a free port.

        ``side_requests=False`` sends every request to the scripted queues (no side answers).
        """
        self.verbose = verbose
        self.side_requests_enabled = side_requests
        self.default_reply: Reply = Reply.text(default_text)
        #: Text answered to side requests that expect free text.
        self.side_text = "Fake side answer."
        #: A reply for the side requests of one kind (`classify_side`'s reason), instead of
        #: the made-up one: e.g. `Reply.error(...)` for ``claude-structured`` leaves Claude
        #: Code without a generated session title.
        self.side_replies: dict[str, Reply] = {}
        self.anthropic = ReplyQueue("anthropic")
        self.responses = ReplyQueue("responses")
        self.chat = ReplyQueue("chat")
        self.gemini = ReplyQueue("gemini")
        #: Used by every API when its own queue is empty (provider-agnostic tests).
        self.any = ReplyQueue("any")
        self._port = port
        self._bound_port: int | None = None
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._requests: list[RecordedRequest] = []
        self._connections: set[Any] = set()
        self._stopping = threading.Event()
        self._counter = itertools.count(1)

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> FakeModelServer:
        """Bind ``127.0.0.1`` and serve in a daemon thread; returns self."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _HTTPServer(("127.0.0.1", self._port), self)
        self._bound_port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-llm:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, cut open connections (slow streams end at once) and free the port."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    close = stop

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """True between :meth:`start` and :meth:`stop`."""
        return self._httpd is not None

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`; still known after :meth:`stop`)."""
        if self._bound_port is None:
            raise RuntimeError("FakeModelServer is not started")
        return self._bound_port

    @property
    def host(self) -> str:
        """Always ``127.0.0.1``."""
        return "127.0.0.1"

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` — the Anthropic and Gemini base URL, and the proxy URL."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` — base URL for OpenAI-style clients (codex, native)."""
        return f"{self.url}/v1"

    def base_url(self, api: str) -> str:
        """The base URL a client of ``api`` should be given."""
        return self.openai_base_url if api in ("responses", "chat") else self.url

    # -- scripting --------------------------------------------------------------------------

    def queue(self, api: str) -> ReplyQueue:
        """The reply queue of ``api`` (one of :data:`APIS`, or ``"any"``)."""
        if api not in (*APIS, "any"):
            raise ValueError(f"unknown api {api!r}; expected one of {APIS} or 'any'")
        return getattr(self, api)

    def script(self, api: str, *replies: ReplySource) -> FakeModelServer:
        """Queue replies for the main conversation of ``api``; returns self for chaining."""
        self.queue(api).append(*replies)
        return self

    @property
    def default_text(self) -> str:
        """The text of the default reply."""
        return self.default_reply.full_text

    @default_text.setter
    def default_text(self, text: str) -> None:
        self.default_reply = Reply.text(text)

    def reset(self) -> None:
        """Forget recorded requests and queued replies (between benchmark rounds)."""
        for api in (*APIS, "any"):
            self.queue(api).clear()
        with self._lock:
            self._requests.clear()

    # -- recording --------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received, oldest first."""
        with self._lock:
            return list(self._requests)

    def requests_for(self, api: str, *, include_side: bool = False) -> list[RecordedRequest]:
        """Main-conversation requests of ``api`` (plus side requests if asked)."""
        kinds = ("main", "side") if include_side else ("main",)
        return [r for r in self.requests if r.api == api and r.kind in kinds]

    def side_requests(self, api: str | None = None) -> list[RecordedRequest]:
        """CLI-internal side requests (optionally of one API)."""
        return [r for r in self.requests if r.kind == "side" and (api is None or r.api == api)]

    @property
    def proxy_attempts(self) -> list[str]:
        """Hosts that clients tried to reach through the server as a proxy (should be [])."""
        return [r.path for r in self.requests if r.kind == "proxy"]

    @staticmethod
    def conversation_texts(request: RecordedRequest) -> list[str]:
        """Shortcut for :meth:`RecordedRequest.conversation_texts`."""
        return request.conversation_texts()

    def wait_for_request(
        self,
        predicate: Callable[[RecordedRequest], bool] | None = None,
        timeout: float = 10.0,
        *,
        api: str | None = None,
        start: int = 0,
    ) -> RecordedRequest:
        """Block until a main request (of ``api``, matching ``predicate``) has arrived.

        Only requests at index ``start`` or later of :attr:`requests` are considered, so
        ``n = len(server.requests)`` before an action, then ``wait_for_request(start=n)`` waits
        for a new one. Returns as soon as the request is recorded (its reply may still be
        streaming). Raises ``TimeoutError``.
        """
        deadline = time.monotonic() + timeout

        def match() -> RecordedRequest | None:
            for r in self._requests[start:]:
                if r.kind != "main" or (api is not None and r.api != api):
                    continue
                if predicate is None or predicate(r):
                    return r
            return None

        with self._cond:
            while (found := match()) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"no matching request within {timeout} s")
                self._cond.wait(remaining)
            return found

    # -- internals --------------------------------------------------------------------------

    def _track(self, conn: Any, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._counter):04d}"

    def _record(self, req: RecordedRequest) -> None:
        with self._cond:
            self._requests.append(req)
            self._cond.notify_all()

    def _next_reply(self, api: str, req: RecordedRequest) -> Reply:
        source = self.queue(api).pop()
        if source is None:
            source = self.any.pop()
        if source is None:
            return self.default_reply
        if callable(source) and not isinstance(source, Reply):
            source = source(req)
        return _as_reply(source)

    def _handle(self, h: _Handler) -> None:
        raw = _read_body(h)
        split = urlsplit(h.path)
        headers = {k.lower(): v for k, v in h.headers.items()}
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        req = RecordedRequest(
            method=h.command,
            path=split.path if not split.scheme else h.path,
            query=dict(parse_qsl(split.query, keep_blank_values=True)),
            headers=headers,
            body=body,
            raw=raw,
        )
        # Proxy use: CONNECT host:port, or an absolute URI for another host.
        if h.command == "CONNECT" or (split.scheme and split.netloc != f"127.0.0.1:{self.port}"):
            req.kind = "proxy"
            req.path = h.path if h.command == "CONNECT" else split.netloc
            self._record(req)
            self._send_json(
                h, req, 403, {"error": {"message": f"fake server: no egress to {req.path}"}}
            )
            return
        if split.scheme:
            req.path = split.path
        path = req.path
        for method, pattern, api, kind in _ROUTES:
            if h.command == method and pattern.match(path):
                req.api, req.kind = api, kind
                break
        else:
            self._handle_misc(h, req)
            return
        api = req.api
        assert api is not None
        if raw and body is None:
            self._record(req)
            self._send_json(h, req, 400, error_body(api, 400, "Request body is not valid JSON."))
            return
        if req.kind == "count_tokens":
            self._record(req)
            n = _estimate_tokens(_count_text(api, body))
            self._send_json(
                h, req, 200, {"totalTokens": n} if api == "gemini" else {"input_tokens": n}
            )
            return
        reason = classify_side(api, path, body) if self.side_requests_enabled else None
        if reason:
            req.kind, req.side_reason = "side", reason
            reply = _side_reply(api, reason, body, self)
        else:
            reply = None
        self._record(req)
        if reply is None:
            reply = self._next_reply(api, req)
        req.reply = reply
        self._answer(h, req, reply)

    def _handle_misc(self, h: _Handler, req: RecordedRequest) -> None:
        path = req.path
        if path in ("/", "") and h.command in ("GET", "HEAD"):
            req.kind = "probe"
            self._record(req)
            self._send_json(h, req, 200, {"ok": True, "server": "fake-llm"})
        elif h.command == "GET" and re.match(r"^(?:/v1)?/models/?$", path):
            req.kind = "models"
            self._record(req)
            self._send_json(h, req, 200, _model_list())
        elif h.command == "GET" and re.match(r"^/v1(?:beta|alpha)/models/?$", path):
            req.kind = "models"
            req.api = "gemini"
            self._record(req)
            self._send_json(
                h, req, 200, {"models": [{"name": f"models/{m}"} for m in _GEMINI_MODELS]}
            )
        else:
            req.kind = "unknown"
            self._record(req)
            self._send_json(
                h,
                req,
                404,
                {
                    "type": "error",
                    "error": {
                        "type": "not_found_error",
                        "message": f"fake server: no route for {h.command} {path}",
                        "code": 404,
                    },
                },
            )

    def _send_json(
        self,
        h: _Handler,
        req: RecordedRequest,
        status: int,
        payload: Any,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        req.status = status
        try:
            h.send_response(status)
            h.send_header("content-type", "application/json")
            h.send_header("content-length", str(len(data)))
            h.send_header("request-id", f"req_fake_{next(self._counter):04d}")
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            if h.command == "CONNECT":
                h.send_header("connection", "close")
                h.close_connection = True
            h.end_headers()
            if h.command != "HEAD":
                h.wfile.write(data)
            h.wfile.flush()
        except OSError:
            req.disconnected = True
            h.close_connection = True
        finally:
            req.finished.set()

    def _answer(self, h: _Handler, req: RecordedRequest, reply: Reply) -> None:
        api = req.api
        assert api is not None
        if reply.latency and self._stopping.wait(reply.latency):
            h.close_connection = True
            req.finished.set()
            return
        if reply.is_error:
            if reply.body is not None:
                payload = reply.body
            else:
                ra = reply.headers.get("retry-after")
                payload = error_body(api, reply.status, reply.message, retry_after=ra)
            self._send_json(h, req, reply.status, payload, reply.headers)
            return
        ctx = _Ctx(request=req, reply=reply, ids=self._new_id)
        stream_enc, json_enc = _ENCODERS[api]
        if not req.stream:
            failure = next((p for p in reply.parts if p.kind == "stream_error"), None)
            if failure is not None:
                self._send_json(h, req, 500, error_body(api, 500, failure.text), reply.headers)
                return
            if any(p.kind == "disconnect" for p in reply.parts):
                h.close_connection = True
                req.disconnected = False
                req.finished.set()
                _hard_close(h)
                return
            self._send_json(h, req, 200, json_enc(ctx), reply.headers)
            return
        req.status = 200
        try:
            h.send_response(200)
            h.send_header("content-type", "text/event-stream; charset=utf-8")
            h.send_header("cache-control", "no-cache")
            h.send_header("transfer-encoding", "chunked")
            h.send_header("request-id", f"req_fake_{next(self._counter):04d}")
            for k, v in reply.headers.items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.flush()
            for frame in stream_enc(ctx):
                if isinstance(frame, _Disconnect):
                    h.close_connection = True
                    _hard_close(h)
                    return
                if isinstance(frame.delay, threading.Event):
                    while not frame.delay.wait(0.05) and not self._stopping.is_set():
                        pass
                elif frame.delay and self._stopping.wait(frame.delay):
                    h.close_connection = True
                    _hard_close(h)
                    return
                if self._stopping.is_set():
                    h.close_connection = True
                    _hard_close(h)
                    return
                h.wfile.write(b"%x\r\n%s\r\n" % (len(frame.data), frame.data))
                h.wfile.flush()
            h.wfile.write(b"0\r\n\r\n")
            h.wfile.flush()
        except OSError:
            # The client went away (abort/cancel): remember it for the test to assert.
            req.disconnected = True
            h.close_connection = True
        finally:
            req.finished.set()


_GEMINI_MODELS = ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite")
_MODEL_IDS = ("fake-model", "gpt-5.4", "gpt-4o", "claude-sonnet-4-6", *_GEMINI_MODELS)


def _model_list() -> dict[str, Any]:
    """A model list readable both as OpenAI (``object``/``owned_by``) and Anthropic
    (``type``/``display_name``/``has_more``) shapes."""
    data = [
        {
            "id": m,
            "object": "model",
            "type": "model",
            "created": 0,
            "created_at": "2025-01-01T00:00:00Z",
            "display_name": m,
            "owned_by": "fake",
        }
        for m in _MODEL_IDS
    ]
    return {
        "object": "list",
        "data": data,
        "has_more": False,
        "first_id": data[0]["id"],
        "last_id": data[-1]["id"],
    }


def _count_text(api: str, body: Any) -> str:
    return "\n".join(m.text for m in _extract_messages(api, body))


def _hard_close(h: _Handler) -> None:
    """Cut the TCP connection so the client sees a truncated stream."""
    with contextlib.suppress(OSError):
        h.wfile.flush()
    with contextlib.suppress(OSError):
        h.connection.shutdown(socket.SHUT_RDWR)


def _read_body(h: _Handler) -> bytes:
    """Read the request body (content-length or chunked; gzip/deflate decoded)."""
    length = h.headers.get("content-length")
    if length is not None:
        data = h.rfile.read(int(length)) if int(length) > 0 else b""
    elif "chunked" in (h.headers.get("transfer-encoding") or "").lower():
        chunks = []
        while True:
            line = h.rfile.readline()
            size = int(line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                # Trailer section ends with an empty line.
                while h.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                break
            chunks.append(h.rfile.read(size))
            h.rfile.readline()
        data = b"".join(chunks)
    else:
        data = b""
    encoding = (h.headers.get("content-encoding") or "").lower()
    if encoding == "gzip":
        data = gzip.decompress(data)
    elif encoding == "deflate":
        data = zlib.decompress(data)
    return data


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run a server in the foreground, logging each request (for manual checks)."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.model_server", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 = random)")
    parser.add_argument("--text", default=DEFAULT_TEXT, help="default reply text")
    parser.add_argument("--quiet", action="store_true", help="do not log requests")
    args = parser.parse_args(argv)
    server = FakeModelServer(default_text=args.text, port=args.port).start()
    print(f"fake model server on {server.url} (OpenAI base {server.openai_base_url})", flush=True)
    seen = 0
    try:
        while True:
            time.sleep(0.2)
            reqs = server.requests
            for r in reqs[seen:]:
                if not args.quiet:
                    last = r.last_user_text().replace("\n", " ")[:80]
                    print(
                        f"{r.method} {r.path} api={r.api} kind={r.kind} model={r.model} {last!r}",
                        flush=True,
                    )
            seen = len(reqs)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
