"""A session is resolved once (issue: one idea, one place): `chat --resume <prefix>` on a Claude
session walks Claude's store once and checks the id once, and the bridge gets the session the
engine found instead of looking it up again. Runs the real Claude Code against the fake server.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

import avatar.core.ids
import avatar.engine.opening
import avatar.library.catalog
import avatar.native.store.manager
import avatar.sessions.store
from avatar.core.events import TextDelta
from avatar.engine.engine import Engine
from tests.support.drive import avatar as run
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def test_resume_by_prefix_walks_the_claude_store_once(
    agent_home: AgentHome, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_bridges("claude")
    env = avatar_env(agent_home)
    env.pop("OPENAI_BASE_URL", None)
    env.pop("OPENAI_API_KEY", None)
    model_server.script("anthropic", "First: PUFFIN.", "Still PUFFIN.")
    first = run(env, agent_home.workdir, "-p", "claude", "chat", "remember PUFFIN", timeout=120)
    assert first.returncode == 0, first.stderr
    sid = re.search(r"session: (\S+) \(claude, new\)", first.stderr).group(1)  # type: ignore[union-attr]

    # Every place that validates an id the user typed (`check_id`; the stores' own
    # path-safety guards are not validation of input): count the checks of this prefix.
    checks: list[str] = []
    real = avatar.core.ids.check_id

    def counting(text: str, **kwargs: bool) -> str:
        if text == sid[:8]:
            checks.append(text)
        return real(text, **kwargs)

    for module in (
        avatar.engine.opening,
        avatar.library.catalog,
        avatar.sessions.store,
        avatar.native.store.manager,
    ):
        monkeypatch.setattr(module, "check_id", counting)

    async def resume() -> str:
        engine = Engine.from_config(agent_home.workdir, env=env, home=Path(env["AVATAR_HOME"]))
        try:
            started = await engine.open(resume=sid[:8])
            answer = "".join(
                [e.text async for e in engine.send("what was it?") if isinstance(e, TextDelta)]
            )
            store = engine.library.store("claude")
            assert store is not None
            assert store.scans == 1, f"the Claude store was walked {store.scans} times"
            assert (started.session_id, started.provider, started.how) == (sid, "claude", "resumed")
            return answer
        finally:
            await engine.close()

    assert asyncio.run(resume()) == "Still PUFFIN."
    assert checks == [sid[:8]]  # the id was checked once
    assert "remember PUFFIN" in model_server.requests_for("anthropic")[-1].all_text()
