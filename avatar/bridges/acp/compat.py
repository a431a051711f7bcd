"""The one place avatar reaches past the ACP SDK's public API.

`ClientSideConnection` (agent-client-protocol 0.12) wraps most agent methods, but not
`session/set_model` (unstable, still what Gemini CLI and claude-agent-acp answer) nor
`session/delete`. Those go out as raw JSON-RPC requests over the connection's private
`_conn.send_request`. So do the requests that open a session: their answers' `models` (the
unstable model state, where Gemini CLI and claude-agent-acp say which model runs) is dropped
by the SDK's response classes, so `open_request` reads it from the raw answer. Keeping that
here means one file to change when the SDK grows a public wrapper or renames its internals;
`tests/acp/test_compat.py` fails as soon as either happens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")

#: Methods the SDK's `ClientSideConnection` has no wrapper for; `send_raw` is how to call them.
UNWRAPPED = ("session/set_model", "session/delete")


async def send_raw(conn: Any, method: str, params: dict[str, Any]) -> Any:
    """Send one JSON-RPC request the SDK does not wrap; the agent's raw JSON answer.

    `conn` is an `acp.core.ClientSideConnection`. Errors arrive as `acp.RequestError`, and a
    dead agent as `ConnectionError`, exactly as for the SDK's own methods.
    """
    # Private on purpose and nowhere else: see the module docstring.
    return await conn._conn.send_request(method, params)


async def set_model(conn: Any, session_id: str, model_id: str) -> Any:
    """`session/set_model` (the unstable method, for agents without a `model` config option)."""
    return await send_raw(conn, "session/set_model", {"sessionId": session_id, "modelId": model_id})


async def open_request(
    conn: Any, method: str, params: BaseModel, response_model: type[M]
) -> tuple[M, str | None]:
    """`session/new`, `session/load` or `session/resume` as the SDK sends it; its answer as
    the SDK reads it, and the model the agent says the session runs (`models.currentModelId`),
    if it says."""
    from acp.utils import serialize_params, validate_model

    raw = await conn._conn.send_request(method, serialize_params(params))
    models = raw.get("models") if isinstance(raw, dict) else None
    current = models.get("currentModelId") if isinstance(models, dict) else None
    return validate_model(raw, response_model), current if isinstance(current, str) else None
