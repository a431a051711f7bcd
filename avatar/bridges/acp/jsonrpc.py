"""JSON-RPC 2.0 over an agent's stdio: avatar's ACP client connection (docs/design.md §2 says
why avatar owns it rather than using the ACP SDK's), on the connection both ACP sides share
(`avatar.core.jsonrpc`).

`JsonRpc` is that connection with the calls an ACP client makes of its own (`session/cancel`,
`session/close`). What the agent answers is plain JSON; `fields` and `text_field` check the
little of it avatar relies on, and an answer without it is a `WrongAnswer`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from avatar.core.jsonrpc import INTERNAL_ERROR as INTERNAL_ERROR
from avatar.core.jsonrpc import INVALID_PARAMS as INVALID_PARAMS
from avatar.core.jsonrpc import METHOD_NOT_FOUND as METHOD_NOT_FOUND
from avatar.core.jsonrpc import Connection
from avatar.core.jsonrpc import NotificationHandler as NotificationHandler
from avatar.core.jsonrpc import RequestHandler as RequestHandler
from avatar.core.jsonrpc import RpcError as RpcError


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


class JsonRpc(Connection):
    """The connection to one agent (over its guarded stdout and its stdin)."""

    async def cancel(self, session_id: str) -> None:
        """`session/cancel` (a notification)."""
        await self.notify("session/cancel", {"sessionId": session_id})

    async def close_session(self, session_id: str) -> None:
        """`session/close`."""
        await self.request("session/close", {"sessionId": session_id})
