"""A switch never carries one provider's model to another (issue 21): with `-m` on A, then
`/provider B`, B's requests ask for B's own model, `/status` shows what B says it runs, and
the handoff is sized
to B's window — with the real CLIs, against the fake model server.

A's model is given a tiny window in the config (4,000 tokens: a 1,000-token handoff), and three
long prompts (~950 tokens each) follow the goal, each with a marker in its middle. Sized to A's
model the handoff to B leaves the older ones out; sized to B's own model it carries all three.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from avatar.core.events import TextDelta
from avatar.engine.engine import Engine
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

API = {"native": "chat", "claude": "anthropic", "codex": "responses", "gemini": "gemini"}
BINARY = {"claude": "claude", "codex": "codex-acp", "gemini": "gemini"}
#: ~3,800 characters (~950 tokens): whole in a handoff (which keeps messages up to 4,000
#: characters), more than a 1,000-token handoff has room for beside the goal and the answer.
MARKERS = [f"MARKER-{n}-IN-THE-MIDDLE" for n in range(3)]
LONG_TURNS = [
    " ".join([*(f"step{i} of part {n}" for i in range(160)), m, *(f"test{i}" for i in range(90))])
    for n, m in enumerate(MARKERS)
]


def _config(home: AgentHome, model: str, api: str) -> Path:
    path = home.root / "avatar-config.yaml"
    base = home.server.openai_base_url if api == "openai" else home.server.url
    path.write_text(
        "models:\n"
        f"  - id: {model}\n"
        f"    api: {api}\n"
        f"    base_url: {base}\n"
        "    api_key_env: OPENAI_API_KEY\n"
        "    context_window: 4000\n"
    )
    return path


async def _say(engine: Engine, text: str) -> str:
    return "".join([e.text async for e in engine.send(text) if isinstance(e, TextDelta)])


@pytest.mark.parametrize(
    ("a", "model", "api", "b"),
    [
        ("claude", "claude-sonnet-4-5", "anthropic", "codex"),
        ("native", "tiny-a", "openai", "gemini"),
    ],
    ids=["claude-to-codex", "native-to-gemini"],
)
def test_a_switch_uses_the_target_s_own_model(
    agent_home: AgentHome, model_server: FakeModelServer, a: str, model: str, api: str, b: str
) -> None:
    require_bridges(*(BINARY[p] for p in (a, b) if p in BINARY))
    config = _config(agent_home, model, api)
    model_server.script(API[a], "Noted.", *(["Planned."] * len(LONG_TURNS)))
    model_server.script(API[b], "On it.")
    env = avatar_env(agent_home)

    async def go() -> tuple[str | None, str | None]:
        engine = Engine.from_config(
            agent_home.workdir,
            provider=a,
            model=model,
            config_file=config,
            permission="allow",
            env=env,
            home=Path(env["AVATAR_HOME"]),
        )
        try:
            await engine.open()
            assert await _say(engine, "GOAL: write a parser") == "Noted."
            for turn in LONG_TURNS:
                assert await _say(engine, turn) == "Planned."
            assert (engine.status().model or "").endswith(model)  # (native: provider/id)
            await engine.switch_provider(b)
            assert engine.model is None  # nothing asked for on B: its own
            assert await _say(engine, "continue") == "On it."
            return engine.status().model, engine.models.of(a)
        finally:
            await engine.close()

    shown, kept_on_a = asyncio.run(go())
    asked_a = [r.model for r in model_server.requests_for(API[a]) if r.is_main]
    assert asked_a and set(asked_a) == {model}
    b_requests = [r for r in model_server.requests_for(API[b]) if r.is_main]
    assert b_requests, f"{b} asked the model nothing"
    assert all(r.model and model not in r.model for r in b_requests), [r.model for r in b_requests]
    # `/status` shows what B says it runs: codex-acp's model option names the model it asks
    # for; Gemini CLI says "auto" (its router picks a model per request, as its own UI says).
    expected = b_requests[-1].model if b == "codex" else "auto"
    assert shown == expected, f"/status shows {shown} on {b}"
    assert kept_on_a == model  # A keeps its model for a return
    # The handoff was sized to B's window: every long turn, marker included, reached B.
    shown_to_b = b_requests[0].all_text()
    assert [m for m in MARKERS if m in shown_to_b] == MARKERS


def test_status_names_the_native_model_before_the_first_prompt(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    """Before anything runs, `/status` names the model the first prompt will ask for."""
    model_server.script("chat", "Hi.")
    env = avatar_env(agent_home)

    async def go() -> str | None:
        engine = Engine.from_config(
            agent_home.workdir, provider="native", env=env, home=Path(env["AVATAR_HOME"])
        )
        try:
            before = engine.status().model
            assert await _say(engine, "hello") == "Hi."
            return before
        finally:
            await engine.close()

    before = asyncio.run(go())
    (request,) = [r for r in model_server.requests_for("chat") if r.is_main]
    assert before is not None and request.model is not None
    assert before.endswith("/" + request.model), (before, request.model)
