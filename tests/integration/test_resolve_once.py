"""A session is resolved once (issue: one idea, one place): `chat --resume <prefix>` on a Claude
session walks Claude's store once and checks the id once, and the bridge gets the session the
engine found instead of looking it up again. Runs the real Claude Code against the fake server.

Then all the way down (issue 21): the resolved session, with its path, travels to the bridge,
the conversation and the switcher, so a resume by prefix followed by a `/provider` switch
walks no store twice (the native resume opens the file it was given; the switch reads the
open session's transcript from its path and asks avatar's records for one parent).
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from pathlib import Path

import pytest

import avatar.core.ids
import avatar.engine.opening
import avatar.library.catalog
import avatar.native.store.manager
import avatar.sessions.store
from avatar.core.events import TextDelta
from avatar.engine.engine import Engine
from avatar.native.store.index import SessionIndex
from avatar.sessions.claude import ClaudeStore
from avatar.sessions.codex import CodexStore
from avatar.sessions.gemini import GeminiStore
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
            store = engine.catalog.store("claude")
            assert store is not None
            assert store.scans == 1, f"the Claude store was walked {store.scans} times"
            assert (started.session_id, started.provider, started.how) == (sid, "claude", "resumed")
            return answer
        finally:
            await engine.close()

    assert asyncio.run(resume()) == "Still PUFFIN."
    assert checks == [sid[:8]]  # the id was checked once
    assert "remember PUFFIN" in model_server.requests_for("anthropic")[-1].all_text()


#: The one method each store walks its whole directory tree through (every listing and every
#: lookup by id or prefix starts there), by provider.
WALKS = {
    "claude": (ClaudeStore, "session_files"),
    "codex": (CodexStore, "session_files"),
    "gemini": (GeminiStore, "session_files"),
    "native": (SessionIndex, "project_dirs"),
}
API = {"native": "chat", "claude": "anthropic", "codex": "responses"}
BINARY = {"claude": "claude", "codex": "codex-acp"}


def count_walks(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts every walk of each store from now on, whoever makes it (the engine's library,
    a bridge, the switcher)."""
    walks: Counter[str] = Counter()
    for name, (cls, method) in WALKS.items():
        real = getattr(cls, method)

        def counting(self: object, *args: object, _real=real, _name=name) -> object:  # type: ignore[no-untyped-def]
            walks[_name] += 1
            return _real(self, *args)

        monkeypatch.setattr(cls, method, counting)
    return walks


@pytest.mark.parametrize(("first", "then"), [("claude", "codex"), ("native", "claude")])
def test_a_resume_by_prefix_and_a_switch_walk_no_store_twice(
    agent_home: AgentHome,
    model_server: FakeModelServer,
    monkeypatch: pytest.MonkeyPatch,
    first: str,
    then: str,
) -> None:
    require_bridges(*(BINARY[p] for p in (first, then) if p in BINARY))
    env = avatar_env(agent_home)
    model_server.script(API[first], "First: PUFFIN.", "Still PUFFIN.")
    model_server.script(API[then], "PUFFIN, handed over.")
    made = run(env, agent_home.workdir, "-p", first, "chat", "remember PUFFIN", timeout=120)
    assert made.returncode == 0, made.stderr
    sid = re.search(rf"session: (\S+) \({first}, new\)", made.stderr).group(1)  # type: ignore[union-attr]
    walks = count_walks(monkeypatch)

    async def resume_and_switch() -> tuple[str, str]:
        engine = Engine.from_config(agent_home.workdir, env=env, home=Path(env["AVATAR_HOME"]))
        try:
            started = await engine.open(resume=sid[:8])
            assert (started.session_id, started.provider, started.how) == (sid, first, "resumed")
            before = "".join(
                [e.text async for e in engine.send("what was it?") if isinstance(e, TextDelta)]
            )
            switched = await engine.switch_provider(then)
            assert switched.provider == then and switched.session_id != sid
            after = "".join(
                [e.text async for e in engine.send("and now?") if isinstance(e, TextDelta)]
            )
            return before, after
        finally:
            await engine.close()

    assert asyncio.run(resume_and_switch()) == ("Still PUFFIN.", "PUFFIN, handed over.")
    # The prefix was looked for in every store once (it could have been any provider's), and
    # nothing after walked one again: not the bridge, not the switch.
    assert walks == Counter(dict.fromkeys(WALKS, 1)), walks
    # The switch read the open session's whole conversation: the new agent got it.
    handed = model_server.requests_for(API[then])[-1].all_text()
    assert "remember PUFFIN" in handed and "Still PUFFIN." in handed
