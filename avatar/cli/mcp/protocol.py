"""The Model Context Protocol on stdio, the server's side, in the standard library alone.

`avatar mcp` answers `tools/list` before anything heavy loads: the official SDK (`mcp` 2.3.0,
with pydantic, anyio and starlette) took 3.3-4.4 s to import on this machine, against a target
of 300 ms from start to the first answer (docs/design.md §12), so the protocol is here instead.

What it speaks (MCP's stdio transport): JSON-RPC 2.0 messages, one per line on stdin and stdout,
UTF-8; stderr is for logs. Requests: `initialize` (protocol version negotiation: the client's
version when it is one of `VERSIONS`, else the newest of them), `ping`, `tools/list` (every tool
with the JSON Schema of its input) and `tools/call`; notifications: `notifications/initialized`
and `notifications/cancelled` (the call it names is stopped and never answered); a batch (a
JSON array, 2025-03-26) is answered as one. Any other method is -32601, a call of an unknown
tool -32602. A tool's failure is a result with `isError` (the model reads it and can try
again), so are arguments its schema refuses (`check_arguments`).

Tools run as tasks on one event loop: a long call (asking another agent) never holds up a
`ping` or another call. Lines are read by a thread, so stdin may be a pipe, a file or a
terminal alike.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import IO, Any

#: The protocol versions negotiated by `initialize`, newest first.
VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

PARSE_ERROR, INVALID_REQUEST, NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602


class ToolError(Exception):
    """A tool's refusal or failure, in words for the model: the call's result is this text
    with `isError` set."""


@dataclass(frozen=True)
class Tool:
    """One tool: its name, what the model reads of it, the JSON Schema of its arguments (an
    object), and the coroutine that answers a call with the text of the result."""

    name: str
    description: str
    schema: dict[str, Any]
    call: Callable[[dict[str, Any]], Awaitable[str]]
    title: str | None = None
    read_only: bool = True  # (annotations: a client may skip asking before a read-only one)

    def listed(self) -> dict[str, Any]:
        """The tool as `tools/list` gives it."""
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.schema,
            "annotations": {"readOnlyHint": self.read_only, "openWorldHint": not self.read_only},
        }
        if self.title:
            out["title"] = self.title
        return out


@dataclass
class Server:
    """An MCP server of `tools` on a pair of byte streams (stdin and stdout by default)."""

    name: str
    version: str
    tools: list[Tool]
    instructions: str | None = None
    out: IO[bytes] = field(default_factory=lambda: sys.stdout.buffer)
    #: Awaited when stdin has ended and every call made is answered.
    on_close: Callable[[], Awaitable[None]] | None = None
    _running: dict[Any, asyncio.Task[None]] = field(default_factory=dict)

    def serve(self, source: IO[bytes] | None = None) -> None:
        """Answer messages from `source` (stdin) until it ends and every call made has been
        answered."""
        asyncio.run(self._serve(source if source is not None else sys.stdin.buffer))

    async def _serve(self, source: IO[bytes]) -> None:
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[bytes | None] = asyncio.Queue()

        def read() -> None:  # (a daemon thread: a blocked read never holds the exit)
            for line in source:
                loop.call_soon_threadsafe(lines.put_nowait, line)
            loop.call_soon_threadsafe(lines.put_nowait, None)

        threading.Thread(target=read, name="mcp-stdin", daemon=True).start()
        while (line := await lines.get()) is not None:
            if line.strip():
                self._receive(line)
        # (what was asked before stdin ended is still answered: a client that wants less
        # cancels it, or ends the process)
        if self._running:
            await asyncio.gather(*self._running.values(), return_exceptions=True)
        if self.on_close is not None:
            await self.on_close()

    def _receive(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self._write(_error(None, PARSE_ERROR, "parse error: not JSON"))
            return
        if isinstance(message, list):  # a batch: one array answers it
            if not message:
                self._write(_error(None, INVALID_REQUEST, "an empty batch"))
                return
            task = asyncio.ensure_future(self._batch(message))
            self._running[id(task)] = task
            task.add_done_callback(lambda t: self._running.pop(id(t), None))
            return
        if not isinstance(message, dict):
            self._write(_error(None, INVALID_REQUEST, "not a JSON-RPC message"))
            return
        if "method" not in message:
            return  # an answer to a request of ours: we send none
        if "id" not in message:
            self._notified(message)
            return
        key = _key(message["id"])
        task = asyncio.ensure_future(self._answer(message))
        self._running[key] = task
        task.add_done_callback(lambda _: self._running.pop(key, None))

    async def _batch(self, messages: list[Any]) -> None:
        answers = []
        for message in messages:
            if isinstance(message, dict) and "method" in message and "id" not in message:
                self._notified(message)
            elif isinstance(message, dict) and "method" in message:
                answers.append(self._respond(message))
            elif not isinstance(message, dict):
                answers.append(_done(_error(None, INVALID_REQUEST, "not a JSON-RPC message")))
        replies = [r for r in await asyncio.gather(*answers) if r is not None]
        if replies:
            self._write(replies)

    async def _answer(self, message: dict[str, Any]) -> None:
        reply = await self._respond(message)
        if reply is not None:
            self._write(reply)

    async def _respond(self, message: dict[str, Any]) -> dict[str, Any] | None:
        msg_id, method = message.get("id"), message.get("method")
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return _error(msg_id, INVALID_PARAMS, "params must be an object")
        try:
            if method == "initialize":
                result = self._initialize(params)
            elif method == "ping":
                result = {}
            elif method == "tools/list":
                result = {"tools": [tool.listed() for tool in self.tools]}
            elif method == "tools/call":
                found = next((t for t in self.tools if t.name == params.get("name")), None)
                if found is None:
                    return _error(msg_id, INVALID_PARAMS, f"unknown tool: {params.get('name')}")
                result = await _call(found, params.get("arguments"))
            else:
                return _error(msg_id, NOT_FOUND, f"method not found: {method}")
        except asyncio.CancelledError:
            return None  # (cancelled by the client: never answered)
        return {"jsonrpc": "2.0", "id": msg_id, "result": result}

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        asked = params.get("protocolVersion")
        result: dict[str, Any] = {
            "protocolVersion": asked if asked in VERSIONS else VERSIONS[0],
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": self.name, "version": self.version},
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def _notified(self, message: dict[str, Any]) -> None:
        if message.get("method") == "notifications/cancelled":
            params = message.get("params")
            wanted = params.get("requestId") if isinstance(params, dict) else None
            task = self._running.get(_key(wanted))
            if task is not None:
                task.cancel()
        # (notifications/initialized and any other: nothing to answer)

    def _write(self, reply: dict[str, Any] | list[dict[str, Any]]) -> None:
        # (ensure_ascii: a lone surrogate from a session file still makes valid UTF-8)
        self.out.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
        self.out.flush()


async def _done(value: dict[str, Any]) -> dict[str, Any]:
    return value


async def _call(tool: Tool, arguments: Any) -> dict[str, Any]:
    """The result of one call: its text, or the refusal of its arguments or its failure."""
    try:
        args = check_arguments(tool.schema, {} if arguments is None else arguments)
        text, failed = await tool.call(args), False
    except ToolError as e:
        text, failed = str(e), True
    except asyncio.CancelledError:
        raise
    except Exception as e:  # (a tool's bug is the model's error to read, not the server's end)
        sys.stderr.write(f"avatar mcp: {tool.name} failed: {type(e).__name__}: {e}\n")
        text, failed = f"{tool.name} failed: {e}", True
    return {"content": [{"type": "text", "text": text}], "isError": failed}


def _key(msg_id: Any) -> str:
    """A request id as a key (ids may be numbers or strings: 1 and "1" are two requests)."""
    return json.dumps(msg_id)


def _error(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def check_arguments(schema: dict[str, Any], arguments: Any) -> dict[str, Any]:
    """`arguments` when the object schema `schema` takes them (the part of JSON Schema the
    tools use: `type`, `properties`, `required`, `additionalProperties: false`, `enum`,
    `minimum`, `maximum`, `minLength`); a `ToolError` naming what is wrong otherwise."""
    if not isinstance(arguments, dict):
        raise ToolError("the arguments must be an object")
    properties: dict[str, Any] = schema.get("properties", {})
    missing = [name for name in schema.get("required", []) if name not in arguments]
    if missing:
        raise ToolError(f"missing argument: {', '.join(missing)}")
    for name, value in arguments.items():
        spec = properties.get(name)
        if spec is None:
            if schema.get("additionalProperties") is False:
                known = ", ".join(properties) or "none"
                raise ToolError(f"unknown argument {name!r} (the arguments: {known})")
            continue
        _check(name, spec, value)
    return arguments


def _check(name: str, spec: dict[str, Any], value: Any) -> None:
    kind = spec.get("type")
    wanted = _TYPES.get(kind, (object,)) if isinstance(kind, str) else (object,)
    # (JSON's true is no number, though Python's bool is an int)
    if not isinstance(value, wanted) or (isinstance(value, bool) and kind != "boolean"):
        raise ToolError(
            f"{name} must be a{'n' if kind in ('integer', 'object', 'array') else ''}"
            f" {kind}, not {json.dumps(value)}"
        )
    if "enum" in spec and value not in spec["enum"]:
        raise ToolError(f"{name} must be one of {', '.join(map(str, spec['enum']))}")
    if "minimum" in spec and value < spec["minimum"]:
        raise ToolError(f"{name} must be at least {spec['minimum']}")
    if "maximum" in spec and value > spec["maximum"]:
        raise ToolError(f"{name} must be at most {spec['maximum']}")
    if "minLength" in spec and isinstance(value, str | list) and len(value) < spec["minLength"]:
        raise ToolError(f"{name} must not be empty")
