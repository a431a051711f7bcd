"""JSON-RPC 2.0 over an agent's stdio, with the standard library alone: avatar's ACP client
connection (docs/design.md §2 says why avatar owns it rather than using the ACP SDK's).

`JsonRpc` frames one JSON object a line, matches answers to requests, runs each request of
the agent as its own task (a permission question must not stop updates from flowing) and
hands notifications over in arrival order, synchronously, before the next line is read (so
every update a turn streamed is routed before the turn's answer is). What the agent answers
is plain JSON; `fields` and `text_field` check the little of it avatar relies on, and an
answer without it is a `WrongAnswer`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping
from itertools import count
from typing import Any

RequestHandler = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""Answers one request of the agent (method, params): the result, or raises `RpcError`."""
NotificationHandler = Callable[[str, dict[str, Any]], None]
"""Takes one notification of the agent (method, params), before the next line is read."""

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class RpcError(Exception):
    """A JSON-RPC error: one the agent answered, or one to answer the agent with."""

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


class WrongAnswer(Exception):
    """An answer of the agent that is not what the protocol says it is (a null where an
    object is due, a field missing or of another type)."""


def fields(result: Any, method: str, *, required: bool = True) -> dict[str, Any]:
    """The answer `result` of `method` as an object; an answer that is no object is a
    `WrongAnswer`, or (where the method may answer nothing, `required=False`) no fields."""
    if isinstance(result, dict):
        return result
    if result is None and not required:
        return {}
    raise WrongAnswer(f"{method} answered {json.dumps(result)[:80]}, not an object")


def text_field(answer: Mapping[str, Any], key: str, method: str) -> str:
    """`answer[key]`, a string the protocol requires; a `WrongAnswer` otherwise."""
    value = answer.get(key)
    if not isinstance(value, str):
        raise WrongAnswer(f"{method} answered no {key}")
    return value


class JsonRpc:
    """One JSON-RPC connection over a reader (the agent's guarded stdout) and a writer."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
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

    # -- out --------------------------------------------------------------------------------

    async def request(self, method: str, params: Mapping[str, Any]) -> Any:
        """Send a request and wait for its result; RpcError when the agent answers an error,
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
            self._writer.write(line.encode("utf-8"))
            await self._writer.drain()
        except (OSError, RuntimeError) as e:  # a closed pipe, a closed transport
            raise ConnectionError(str(e) or "the agent's stdin is closed") from None

    # -- in ---------------------------------------------------------------------------------

    async def _receive(self) -> None:
        try:
            while line := await self._reader.readline():
                # The guard passed only lines that parse as JSON objects.
                message = json.loads(line)
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
                    answer.set_exception(ConnectionError("the agent closed the connection"))

    def _answered(self, message: dict[str, Any]) -> None:
        answer = self._pending.get(message.get("id"))  # type: ignore[arg-type]
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
        except Exception as e:  # a bug of ours must not leave the agent waiting forever
            reply = {"id": request_id, "error": RpcError(INTERNAL_ERROR, str(e)).payload()}
        with contextlib.suppress(ConnectionError):
            await self._send(reply)

    # -- the calls AgentConnection makes ------------------------------------------------------

    async def cancel(self, session_id: str) -> None:
        """`session/cancel` (a notification)."""
        await self.notify("session/cancel", {"sessionId": session_id})

    async def close_session(self, session_id: str) -> None:
        """`session/close`."""
        await self.request("session/close", {"sessionId": session_id})

    async def close(self) -> None:
        """Stop reading and drop the handlers still running."""
        self._closed = True
        self._receiving.cancel()
        for task in list(self._handlers):
            task.cancel()
