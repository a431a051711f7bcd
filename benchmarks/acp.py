"""ACP bridge costs against the bare SDK client, both driving the fake ACP agent.

- start: `ACPBridge.start()` (spawn + initialize) vs the SDK's own spawn + initialize;
- turn: one prompt through the bridge (routing, event translation) vs the bare SDK;
- stderr flood: a turn while the agent writes 10 MB to stderr vs a plain turn;
- reopen: loading a 400-message session, replay settled, vs opening a new session.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, row


def _bridge(root: Path, **config: Any) -> Any:
    from avatar.bridges.acp.bridge import ACPBridge
    from avatar.bridges.base import BridgeContext
    from avatar.core.config import Settings
    from avatar.providers.registry import ProviderSpec
    from tests.support.acp_agent import command

    root.mkdir(parents=True, exist_ok=True)
    config.setdefault("state_dir", str(root / "state"))
    spec = ProviderSpec(name="fake", transport="acp", command=tuple(command(config, "load,list")))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ctx = BridgeContext(spec=spec, cwd=root, settings=Settings(), avatar_home=root, env=env)
    return ACPBridge(ctx)


class _SilentClient:
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None


async def _sdk_start_and_turns(root: Path, turns: int) -> tuple[float, list[float]]:
    import acp

    from tests.support.acp_agent import command

    argv = command({"state_dir": str(root / "sdk-state")})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    async with acp.spawn_agent_process(_SilentClient(), *argv, env=env, cwd=root) as (conn, _):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        started = time.perf_counter() - t0
        session = await conn.new_session(cwd=str(root), mcp_servers=[])
        times = []
        for n in range(turns):
            t = time.perf_counter()
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(f"q{n}")])
            times.append(time.perf_counter() - t)
    return started, times


async def _bridge_start_and_turns(root: Path, turns: int) -> tuple[float, list[float]]:
    from avatar.bridges.base import OpenRequest

    bridge = _bridge(root)
    t0 = time.perf_counter()
    await bridge.start()
    started = time.perf_counter() - t0
    try:
        await bridge.open(OpenRequest("new"))
        times = []
        for n in range(turns):
            t = time.perf_counter()
            async for _ in bridge.send(f"q{n}"):
                pass
            times.append(time.perf_counter() - t)
    finally:
        await bridge.stop()
    return started, times


async def _flood(root: Path) -> tuple[float, float]:
    from avatar.bridges.base import OpenRequest

    bridge = _bridge(root / "flood", stderr_flood=10 * 1024 * 1024)
    plain = _bridge(root / "plain")
    out = []
    for b in (plain, bridge):
        await b.start()
        try:
            await b.open(OpenRequest("new"))
            t = time.perf_counter()
            async for _ in b.send("go"):
                pass
            out.append(time.perf_counter() - t)
        finally:
            await b.stop()
    return out[0], out[1]


async def _reopen(root: Path) -> tuple[float, float]:
    from avatar.bridges.base import OpenRequest
    from tests.support.acp_agent import seed_session

    sid = seed_session(root / "state", root.resolve(), turns=200)
    bridge = _bridge(root)
    await bridge.start()
    try:
        t = time.perf_counter()
        await bridge.open(OpenRequest("new"))
        new = time.perf_counter() - t
        t = time.perf_counter()
        await bridge.open(OpenRequest("resume", sid))
        await bridge.router.replay_settled()
        loaded = time.perf_counter() - t
    finally:
        await bridge.stop()
    return new, loaded


def run(quick: bool) -> list[dict[str, object]]:
    """Bridge vs bare SDK on the fake agent (ratios measured in this run)."""
    turns = 10 if quick else 40
    with tempfile.TemporaryDirectory(prefix="avatar-bench-acp-") as tmp:
        root = Path(tmp)
        # Import the SDK once up front so neither side pays for it inside the timings.
        import acp  # noqa: F401

        sdk_start, sdk_turns = asyncio.run(_sdk_start_and_turns(root, turns))
        br_start, br_turns = asyncio.run(_bridge_start_and_turns(root, turns))
        plain, flood = asyncio.run(_flood(root))
        new, loaded = asyncio.run(_reopen(root / "reopen"))
    sdk_turn = statistics.median(sdk_turns)
    br_turn = statistics.median(br_turns)
    return [
        row("fake agent spawn+initialize, bare SDK (baseline)", sdk_start, None, "-", True),
        row(
            "fake agent spawn+initialize, ACPBridge",
            br_start,
            sdk_start,
            "≤ 1.3× baseline",
            br_start <= 1.3 * sdk_start + 0.05,
        ),
        row("turn, bare SDK (baseline)", sdk_turn, None, "-", True),
        row(
            "turn, ACPBridge", br_turn, sdk_turn, "≤ 1.5× + 2 ms", br_turn <= 1.5 * sdk_turn + 0.002
        ),
        row("turn, plain (baseline)", plain, None, "-", True),
        row("turn with 10 MB stderr flood", flood, plain, "< 5 s (no stall)", flood < 5),
        row("open new session (baseline)", new, None, "-", True),
        row(
            "load 400-message session, replay settled",
            loaded,
            new,
            "< 1 s",
            loaded < 1.0,
        ),
    ]
