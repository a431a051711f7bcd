"""JSON-RPC 2.0, one JSON object a line, with the standard library alone: the connection both of
avatar's ACP sides speak — the client that drives agents (`avatar.bridges.acp.jsonrpc`) and
the agent that editors drive (`avatar acp`, `avatar.cli.acp`).

`Connection` frames one JSON object a line, matches answers to its requests, runs each request
of the peer as its own task (a permission question must not stop updates from flowing, a long
prompt must not stop a cancel) and hands notifications over in arrival order, synchronously,
before the next line is read (so every update a turn streamed is routed before the turn's
answer is). A line that is no JSON object is skipped: the peer's junk never ends the
connection (the client side also has a guard before it, `acp/guard.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping
from itertools import count
from typing import Any, Protocol

RequestHandler = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""Answers one request of the peer (method, params): the result, or raises `RpcError`."""
NotificationHandler = Callable[[str, dict[str, Any]], None]
"""Takes one notification of the peer (method, params), before the next line is read."""

INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class RpcError(Exception):
    """A JSON-RPC error: one the peer answered, or one to answer the peer with."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data

    def payload(self) -> dict[str, Any]:
        """The `error` member of a response carrying this error."""
        error: dict[str, Any] = {"code": self.code, "message": str(self)}
        if self.data is not None:
            error["data"] = self.data
        return error


class LineWriter(Protocol):
    """Where a connection writes its lines: an `asyncio.StreamWriter`, or anything that
    writes bytes and can be drained the same way."""

    def write(self, data: bytes) -> None:
        """Write `data` (whole lines)."""

    async def drain(self) -> None:
        """Wait until what was written may be written again."""


class Connection:
    """One JSON-RPC connection over a reader of lines and a writer."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: LineWriter,
        on_request: RequestHandler,
        on_notification: NotificationHandler,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._on_request = on_request
        self._on_notification = on_notification
        self._ids = count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._handlers: set[asyncio.Task[None]] = set()
        self._closed = False
        self._receiving = asyncio.get_running_loop().create_task(self._receive())

    @property
    def finished(self) -> asyncio.Task[None]:
        """The task reading the peer's lines: done once the peer closed its side."""
        return self._receiving

    # -- out --------------------------------------------------------------------------------

    async def request(self, method: str, params: Mapping[str, Any]) -> Any:
        """Send a request and wait for its result; RpcError when the peer answers an error,
        ConnectionError when the connection ends first."""
        if self._closed:
            raise ConnectionError("the connection is closed")
        request_id = next(self._ids)
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = answer
        try:
            await self._send({"id": request_id, "method": method, "params": params})
            return await answer
        finally:
            self._pending.pop(request_id, None)

    async def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """Send a notification (nothing comes back)."""
        await self._send({"method": method, "params": params})

    async def _send(self, message: dict[str, Any]) -> None:
        line = json.dumps({"jsonrpc": "2.0", **message}, ensure_ascii=False) + "\n"
        try:
            self._writer.write(line.encode("utf-8", "backslashreplace"))
            await self._writer.drain()
        except (OSError, RuntimeError) as e:  # a closed pipe, a closed transport
            raise ConnectionError(str(e) or "the peer's input is closed") from None

    # -- in ---------------------------------------------------------------------------------

    async def _receive(self) -> None:
        try:
            while line := await self._reader.readline():
                try:
                    message = json.loads(line)
                except ValueError:
                    continue  # (not JSON: nothing to answer to)
                if not isinstance(message, dict):
                    continue
                if "method" in message:
                    self._incoming(message)
                else:
                    self._answered(message)
        except (OSError, ValueError, asyncio.IncompleteReadError):
            pass
        finally:
            self._closed = True
            for answer in self._pending.values():
                if not answer.done():
                    answer.set_exception(ConnectionError("the peer closed the connection"))

    def _answered(self, message: dict[str, Any]) -> None:
        msg_id = message.get("id")
        answer = self._pending.get(msg_id) if isinstance(msg_id, int) else None
        if answer is None or answer.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            answer.set_exception(
                RpcError(
                    code if isinstance(code, int) else INTERNAL_ERROR,
                    str(error.get("message") or "error"),
                    error.get("data"),
                )
            )
        else:
            answer.set_result(message.get("result"))

    def _incoming(self, message: dict[str, Any]) -> None:
        method, params = str(message["method"]), message.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" not in message:
            self._on_notification(method, params)
            return
        task = asyncio.get_running_loop().create_task(self._answer(message["id"], method, params))
        self._handlers.add(task)
        task.add_done_callback(self._handlers.discard)

    async def _answer(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        try:
            result = await self._on_request(method, params)
            reply: dict[str, Any] = {"id": request_id, "result": result}
        except RpcError as e:
            reply = {"id": request_id, "error": e.payload()}
        except (KeyError, TypeError) as e:  # a parameter missing, or of another type
            problem = RpcError(INVALID_PARAMS, f"invalid params for {method}: {e}")
            reply = {"id": request_id, "error": problem.payload()}
        except Exception as e:  # a bug of ours must not leave the peer waiting forever
            reply = {"id": request_id, "error": RpcError(INTERNAL_ERROR, str(e)).payload()}
        with contextlib.suppress(ConnectionError):
            await self._send(reply)

    async def close(self) -> None:
        """Stop reading and drop the handlers still running."""
        self._closed = True
        self._receiving.cancel()
        for task in list(self._handlers):
            task.cancel()

    async def drained(self) -> None:
        """Wait until every request of the peer being answered is answered."""
        while self._handlers:
            await asyncio.gather(*list(self._handlers), return_exceptions=True)
