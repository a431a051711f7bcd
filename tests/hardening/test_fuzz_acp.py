"""ACP messages from a hostile agent: no crash, no hang, bounded memory.

`hostile_agent.py` holds a session well enough and writes junk before each prompt's answer:
unknown update kinds, huge lines, invalid UTF-8, replies to requests never sent,
notifications for other sessions, arbitrary JSON and bytes. The ACP bridge must finish the
turn (within seconds), show nothing from another session, and skip the junk with at most a
notice. Run longer: see `tests/hardening/conftest.py`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from avatar.bridges.acp.bridge import ACPBridge
from avatar.bridges.acp.guard import guard_stdout
from avatar.bridges.base import BridgeContext, OpenRequest
from avatar.core.config import Settings
from avatar.core.events import BaseEvent
from avatar.providers.registry import ProviderSpec
from tests.hardening.fuzzing import JSON
from tests.support.drive import avatar

AGENT = Path(__file__).with_name("hostile_agent.py")
SID = "hostile-1"


def _update(kind: str, sid: str = SID, **extra: Any) -> bytes:
    params = {"sessionId": sid, "update": {"sessionUpdate": kind, **extra}}
    return json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": params}).encode()


def _chunk(text: str, sid: str = SID) -> bytes:
    return _update("agent_message_chunk", sid, content={"type": "text", "text": text})


async def _turn(root: Path, junk: list[bytes]) -> tuple[list[BaseEvent], list[BaseEvent]]:
    """One session and one prompt against the hostile agent writing `junk` first."""
    (root / "work").mkdir(parents=True, exist_ok=True)
    junk_file = root / "junk.json"
    junk_file.write_text(json.dumps([base64.b64encode(j).decode() for j in junk]))
    spec = ProviderSpec(name="hostile", transport="acp", command=(sys.executable, str(AGENT)))
    emitted: list[BaseEvent] = []
    ctx = BridgeContext(
        spec=spec,
        cwd=root / "work",
        settings=Settings(),
        avatar_home=root / "home",
        env={**os.environ, "HOSTILE_JUNK_FILE": str(junk_file)},
        emit=emitted.append,
    )
    bridge = ACPBridge(ctx)
    await bridge.start()
    try:
        await bridge.open(OpenRequest("new"))
        events = [e async for e in bridge.send("hi")]
    finally:
        await bridge.stop()
    return events, emitted


def _run(root: Path, junk: list[bytes], timeout: float = 20) -> tuple[str, list[BaseEvent]]:
    events, emitted = asyncio.run(asyncio.wait_for(_turn(root, junk), timeout))
    assert events and getattr(events[-1], "type", None) in ("turn_finished", "error"), events
    text = "".join(getattr(e, "text", "") for e in events if getattr(e, "type", None) == "text")
    return text, emitted


CASES = {
    "unknown update kinds": [_update("hologram", stuff=[1, 2]), _update("", content=None)],
    "other sessions": [_chunk("LEAK", sid="someone-else"), _update("plan", sid="x", entries=[])],
    "replies never asked for": [
        b'{"jsonrpc":"2.0","id":9999,"result":{"x":1}}',
        b'{"jsonrpc":"2.0","id":"zz","error":{"code":1,"message":"m"}}',
        b'{"jsonrpc":"2.0","id":null,"result":null}',
    ],
    "invalid utf-8": [b'\xff\xfe{"jsonrpc":"2.0"}', _chunk("a")[:-3] + b'\xff"}}}'],
    "not json-rpc": [b"not json", b"[]", b"42", b"{", b'{"jsonrpc":"2.0"}', b"null"],
    "bad params": [
        b'{"jsonrpc":"2.0","method":"session/update","params":null}',
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":5,"update":7}}',
    ],
    "requests avatar does not serve": [
        b'{"jsonrpc":"2.0","id":77,"method":"evil/doit","params":{}}',
        b'{"jsonrpc":"2.0","id":78,"method":"fs/read_text_file","params":{"path":"/etc/passwd"}}',
    ],
}


@pytest.mark.parametrize("junk", list(CASES.values()), ids=list(CASES))
def test_hostile_agent_junk_is_skipped(tmp_path: Path, junk: list[bytes]) -> None:
    text, _ = _run(tmp_path, junk)
    assert text == "ok"  # the real answer still arrives; nothing leaks in from elsewhere


def test_a_huge_line_is_dropped_without_holding_it(tmp_path: Path) -> None:
    huge = _chunk("A" * (60 * 1024 * 1024))  # over the 50 MB line limit
    text, emitted = _run(tmp_path, [huge, _chunk("still ")], timeout=60)
    assert text == "still ok"
    notices = [getattr(e, "message", "") for e in emitted]
    assert any("longer than" in n for n in notices), notices


def test_the_guard_keeps_memory_bounded_whatever_the_line_length() -> None:
    async def feed() -> list[bytes]:
        source = asyncio.StreamReader(limit=64 * 1024)
        dropped: list[str] = []
        guarded = guard_stdout(source, dropped.append, max_line=64 * 1024)
        block = b"B" * (1024 * 1024)
        for _ in range(32):  # a 32 MB line, fed a megabyte at a time
            source.feed_data(block)
            await asyncio.sleep(0)
        source.feed_data(b"\n" + b'{"ok": 1}\n')
        source.feed_eof()
        lines = [line async for line in guarded]
        assert dropped == ["skipped a line from the agent longer than 65,536 bytes"]
        return lines

    tracemalloc.start()
    try:
        lines = asyncio.run(feed())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lines == [b'{"ok": 1}\n']
    assert peak < 8 * 1024 * 1024  # the 32 MB line was never held


def _rpc(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode()


JUNK_LINE = st.one_of(
    st.binary(max_size=120).map(lambda b: b.replace(b"\n", b"")),
    JSON.map(lambda v: json.dumps(v).encode()),
    st.builds(
        lambda kind, sid, extra: _update(kind, sid, **extra),
        st.sampled_from(["agent_message_chunk", "tool_call", "plan", "usage_update", "x"]),
        st.sampled_from([SID, "other", ""]),
        st.dictionaries(st.sampled_from(["content", "toolCallId", "entries", "title"]), JSON),
    ),
    st.builds(
        lambda rid, result: _rpc({"id": rid, "result": result}),
        st.integers(100, 10**9) | st.text(max_size=5),
        JSON,
    ),
    st.builds(
        lambda rid, method, params: _rpc({"id": rid, "method": method, "params": params}),
        st.integers(1000, 10**6),
        st.sampled_from(["session/request_permission", "terminal/create", "fs/x", "zzz"]),
        JSON,
    ),
)


@given(junk=st.lists(JUNK_LINE, min_size=1, max_size=8))
def test_fuzz_acp_messages_from_a_hostile_agent(
    tmp_path_factory: pytest.TempPathFactory, junk: list[bytes]
) -> None:
    text, _ = _run(tmp_path_factory.mktemp("hostile"), junk)
    assert "ok" in text or text == ""  # a forged reply may end the turn early; never a crash


def test_the_cli_shows_no_traceback_for_a_hostile_agent(
    tmp_path: Path, avatar_env: dict[str, str]
) -> None:

    junk = [b"not json", b"[]", b'{"jsonrpc":"2.0","method":"session/update","params":null}']
    junk_file = tmp_path / "junk.json"
    junk_file.write_text(json.dumps([base64.b64encode(j).decode() for j in junk]))
    config = Path(avatar_env["AVATAR_CONFIG"])
    command = json.dumps([sys.executable, str(AGENT)])
    config.write_text(f"providers:\n  hostile: {{transport: acp, command: {command}}}\n")
    env = {**avatar_env, "HOSTILE_JUNK_FILE": str(junk_file)}
    out = avatar(env, tmp_path, "-p", "hostile", "chat", "hi")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
    assert "Traceback" not in out.stderr and "ERROR" not in out.stderr, out.stderr
    assert "notice: hostile: skipped output from the agent that is not a JSON-RPC message" in (
        out.stderr
    )
