"""Canary for `avatar.bridges.acp.compat`, the one use of the ACP SDK's private API.

Fails when the SDK grows a public wrapper for a method avatar sends raw (then use it and
shrink acp_compat), or when the private `_conn.send_request` it relies on changes shape.
"""

from __future__ import annotations

import inspect

import pytest
from acp import RequestError
from acp.connection import Connection
from acp.core import ClientSideConnection

from avatar.bridges.acp import compat as acp_compat
from avatar.bridges.base import OpenRequest
from tests.acp.conftest import Factory

# What a public wrapper of each raw method would be called (SDK naming: snake_case of the
# method, as `session/list` → `list_sessions`, plus the camelCase aliases it also defines).
WRAPPER_NAMES = {
    "session/set_model": ("set_session_model", "setSessionModel", "set_model"),
    "session/delete": ("delete_session", "deleteSession"),
}


@pytest.mark.parametrize("method", acp_compat.UNWRAPPED)
def test_the_sdk_still_has_no_public_wrapper(method: str) -> None:
    present = [n for n in WRAPPER_NAMES[method] if hasattr(ClientSideConnection, n)]
    assert present == [], f"the SDK now wraps {method} ({present}): use it in acp_compat"


def test_the_private_request_path_has_the_expected_shape() -> None:
    # `ClientSideConnection.__init__` keeps its `Connection` in `_conn` …
    assert "self._conn = Connection(" in inspect.getsource(ClientSideConnection.__init__)
    # … whose `send_request(method, params)` is a coroutine function.
    assert inspect.iscoroutinefunction(Connection.send_request)
    assert list(inspect.signature(Connection.send_request).parameters) == [
        "self",
        "method",
        "params",
    ]


async def test_a_raw_request_round_trips(fake: Factory) -> None:
    h = await fake("list")
    await h.bridge.open(OpenRequest("new"))
    assert h.bridge.agent is not None
    conn = h.bridge.agent.conn
    answer = await acp_compat.send_raw(conn, "session/list", {"cwd": str(h.cwd.resolve())})
    assert [s["sessionId"] for s in answer["sessions"]] == [h.bridge.session_id]
    assert await acp_compat.send_raw(conn, "_fake/configure", {"page_size": 0}) == {"ok": True}
    # Errors arrive as the SDK's own RequestError (the fake agent has no set_model).
    with pytest.raises(RequestError) as info:
        await acp_compat.set_model(conn, h.bridge.session_id or "", "some-model")
    assert info.value.code == -32601
