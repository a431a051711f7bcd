"""Harness for the ACP bridge tests: an `ACPBridge` driving the fake agent of
`tests.support.acp_agent` in a subprocess, with its events and request log at hand."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest_asyncio

from avatar.bridges.acp.bridge import ACPBridge
from avatar.bridges.base import BridgeContext, OpenRequest
from avatar.core.config import Settings
from avatar.core.events import BaseEvent, PermissionRequested
from avatar.policy.permissions import Answer, PermissionHandler, deny_all
from avatar.providers.registry import ProviderSpec
from tests.acp.fake_store import FakeStore
from tests.support.acp_agent import command

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Harness:
    """One bridge to one fake agent, plus what it emitted outside turns."""

    bridge: ACPBridge
    root: Path
    emitted: list[BaseEvent] = field(default_factory=list)
    asked: list[PermissionRequested] = field(default_factory=list)

    @property
    def cwd(self) -> Path:
        return self.bridge.ctx.cwd

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    async def turn(self, prompt: str) -> list[BaseEvent]:
        """Run one turn and return every event it yielded."""
        return [e async for e in self.bridge.send(prompt)]

    def requests(self, method: str) -> list[dict[str, Any]]:
        """Params of every request the agent received with this method (from its log)."""
        log = self.state_dir / "requests.jsonl"
        if not log.exists():
            return []
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        return [entry["params"] for entry in lines if entry["method"] == method]

    async def configure(self, **options: Any) -> None:
        """Change the running fake agent's behaviour."""
        assert self.bridge.agent is not None
        await self.bridge.agent.conn.request("_fake/configure", options)

    def notices(self) -> list[str]:
        return [e.message for e in self.emitted if e.type == "notice"]  # type: ignore[attr-defined]


def text_of(events: list[BaseEvent]) -> str:
    """The answer text of a turn."""
    return "".join(e.text for e in events if e.type == "text")  # type: ignore[attr-defined]


def build(
    root: Path,
    caps: str = "",
    *,
    name: str = "fake",
    quirks: frozenset[str] = frozenset(),
    store: bool = False,
    settings: Settings | None = None,
    permission: PermissionHandler | None = None,
    additional_dirs: list[Path] | None = None,
    env: dict[str, str] | None = None,
    writes: tuple[str, ...] = (),
    **config: Any,
) -> Harness:
    """A harness (not started) whose fake agent keeps its state under `root/state`.

    `store=True` hands the bridge a `FakeStore` as the engine's reader of the provider's
    sessions (the on-disk listing continue-last falls back to); `writes` are more paths its
    sandbox lets it write (files it plays another agent writing)."""
    root.mkdir(parents=True, exist_ok=True)
    cwd = root / "work"
    cwd.mkdir(exist_ok=True)
    config.setdefault("state_dir", str(root / "state"))
    spec = ProviderSpec(
        name=name,
        transport="acp",
        command=tuple(command(config, caps)),
        quirks=quirks,
        install_hint="pip install fake",
        auth_hint="run fake login",
        # Its state (and what it plays another agent writing): its only writes outside the project.
        state_dirs=(config["state_dir"] + "/", *writes),
    )
    emitted: list[BaseEvent] = []
    harness_ref: list[Harness] = []

    async def ask(request: PermissionRequested) -> Answer | bool:
        harness_ref[0].asked.append(request)
        return await (permission or deny_all)(request)  # the bridge reads the answer

    state = str(root / "state")
    child_env = {**(env or os.environ), "PYTHONPATH": str(REPO), "FAKE_ACP_STATE": state}
    ctx = BridgeContext(
        spec=spec,
        cwd=cwd,
        settings=settings or Settings(),
        avatar_home=root / "avatar-home",
        env=child_env,
        additional_dirs=additional_dirs or [],
        store=FakeStore(name, child_env, root / "avatar-home") if store else None,
        permission=ask,
        emit=emitted.append,
    )
    harness = Harness(ACPBridge(ctx), root, emitted)
    harness_ref.append(harness)
    return harness


@contextlib.asynccontextmanager
async def opened(harness: Harness) -> AsyncIterator[Harness]:
    """The harness's agent started with a new session open; stopped afterwards."""
    await harness.bridge.start()
    try:
        await harness.bridge.open(OpenRequest("new"))
        yield harness
    finally:
        await harness.bridge.stop()


Factory = Callable[..., Awaitable[Harness]]


@pytest_asyncio.fixture
async def fake(tmp_path: Path) -> AsyncIterator[Factory]:
    """`await fake(caps, **config)` → a started Harness; every one is stopped afterwards."""
    made: list[Harness] = []

    async def factory(caps: str = "", *, root: Path | None = None, **kwargs: Any) -> Harness:
        harness = build(root or tmp_path / f"agent{len(made)}", caps, **kwargs)
        made.append(harness)
        await harness.bridge.start()
        return harness

    yield factory
    for harness in made:
        await harness.bridge.stop()
