"""Engine: registry from config, fallbacks with notices, handoffs across providers, id lookup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from avatar.bridges.base import OpenRequest
from avatar.core.config import Settings, parse_settings
from avatar.core.errors import AvatarError, UsageError
from avatar.core.events import BaseEvent, Notice, SessionStarted, TextDelta
from avatar.engine.engine import Engine
from avatar.engine.opening import plan_open
from avatar.providers.registry import ProviderSpec
from avatar.sessions.types import SessionInfo
from tests.core.fake_bridge import FakeBridge

FAKE = "tests.core.fake_bridge:FakeBridge"


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    e = Engine(
        Settings(), tmp_path, env={"PATH": "/nonexistent", "HOME": str(tmp_path)}, home=tmp_path
    )
    for name in ("plain", "other-resumable"):
        e.registry.add(ProviderSpec(name=name, transport="acp", bridge=FAKE))
    FakeBridge.prompts = []
    return e


def test_registry_has_builtins_and_config_acp_agents(tmp_path: Path) -> None:
    settings = parse_settings(
        {
            "providers": {
                "my-agent": {"transport": "acp", "command": ["pi-acp", "--x"]},
                "codex": {"executable": "/opt/codex-acp", "env": {"A": "1"}},
            }
        }
    )
    e = Engine(settings, tmp_path, env={}, home=tmp_path)
    names = [s.name for s in e.registry.specs()]
    assert names[:5] == ["native", "claude", "claude-acp", "codex", "gemini"]
    assert e.registry.spec("my-agent").command == ("pi-acp", "--x")
    assert e.registry.spec("my-agent").bridge == "avatar.bridges.acp.bridge:ACPBridge"
    assert e.registry.spec("codex").command == ("/opt/codex-acp",)
    assert e.registry.env_for(e.registry.spec("codex"))["A"] == "1"
    with pytest.raises(UsageError, match="unknown provider 'nope'"):
        e.registry.spec("nope")


async def test_resume_unsupported_opens_new_session_with_notice(engine: Engine) -> None:
    seen: list[BaseEvent] = []
    engine.subscribe(seen.append)
    started = await engine.agent.open_on("plain", OpenRequest("resume", "abc"))
    assert started.how == "new"
    notices = [e.message for e in seen if isinstance(e, Notice)]
    assert notices == ["resuming a session is not supported by plain; opened a new session instead"]
    assert any(isinstance(e, SessionStarted) for e in seen)
    await engine.close()


async def test_switch_provider_hands_the_conversation_over(engine: Engine) -> None:
    await engine.agent.open_on("plain", OpenRequest("new"))
    answer = [
        e.text async for e in engine.send("remember the word PELICAN") if isinstance(e, TextDelta)
    ]
    assert answer
    started = await engine.switch_provider("other-resumable")
    assert started.provider == "other-resumable" == engine.status().provider
    [e async for e in engine.send("what was the word?")]
    first_on_new = FakeBridge.prompts[-1]
    assert "remember the word PELICAN" in first_on_new  # the handoff
    assert first_on_new.startswith("what was the word?")
    [e async for e in engine.send("and again")]
    assert FakeBridge.prompts[-1] == "and again"  # the seed is used once
    await engine.close()


async def test_fresh_switch_carries_nothing(engine: Engine) -> None:
    await engine.agent.open_on("plain", OpenRequest("new"))
    [e async for e in engine.send("secret context")]
    await engine.switch_provider("other-resumable", handoff=False)
    [e async for e in engine.send("hi")]
    assert FakeBridge.prompts[-1] == "hi"
    await engine.close()


async def test_listing_another_agent_s_sessions_does_not_lose_the_open_one(
    engine: Engine,
) -> None:
    """`refresh` starts the other provider's agent in place of the running one; the next turn
    still goes to the open session, on its own provider, reopened."""
    started = await engine.open("other-resumable")
    await engine.agent.refresh("plain")
    [e async for e in engine.send("still with me?")]
    assert FakeBridge.started[-1].name == "other-resumable"
    assert FakeBridge.started[-1].session_id == started.session_id
    assert FakeBridge.prompts[-1] == "still with me?"
    assert engine.status().session_id == started.session_id
    await engine.close()


class _Store:
    def __init__(self, sessions: list[SessionInfo]) -> None:
        self.sessions = sessions
        self.warnings: list[str] = []

    def list(self, cwd: Path | None) -> list[SessionInfo]:
        return self.sessions

    def find(self, prefix: str) -> list[SessionInfo]:
        return [s for s in self.sessions if s.id.startswith(prefix)]


def test_find_session_by_prefix_across_providers(engine: Engine) -> None:
    for name in ("native", "claude", "claude-acp", "codex", "gemini"):
        engine.catalog.use_store(name, None)
    engine.registry.add(ProviderSpec(name="a", transport="acp", bridge=FAKE, store="x:A"))
    engine.registry.add(ProviderSpec(name="b", transport="acp", bridge=FAKE, store="x:B"))
    engine.catalog.use_store("a", _Store([SessionInfo(id="0123-aaaa", provider="a")]))  # type: ignore[arg-type]
    engine.catalog.use_store(
        "b",
        _Store([SessionInfo(id="0124-bbbb", provider="b"), SessionInfo(id="9", provider="b")]),  # type: ignore[arg-type]
    )
    assert engine.find("0124").provider == "b"
    with pytest.raises(UsageError, match=r"ambiguous: 0123-aaaa \(a\), 0124-bbbb \(b\)"):
        engine.find("012")
    with pytest.raises(UsageError, match="no session matches 'zz'"):
        engine.find("zz")
    with pytest.raises(UsageError, match="invalid session id"):
        engine.find("../x")
    # Undated sessions: ties in recency go by id, highest first (ULIDs: the newest first).
    assert [s.id for s in engine.sessions(any_cwd=True)] == ["9", "0124-bbbb", "0123-aaaa"]


def test_no_usable_provider_says_what_it_looked_for(tmp_path: Path) -> None:
    e = Engine(
        Settings(), tmp_path, env={"PATH": "/nonexistent", "HOME": str(tmp_path)}, home=tmp_path
    )
    e.registry.add(
        ProviderSpec(
            name="claude", transport="stream-json", command=("no-such-claude-x",), auth_hint="login"
        )
    )
    e.registry.add(
        ProviderSpec(name="codex", transport="acp", command=("no-such-codex-x",), auth_hint="key")
    )
    e.registry.add(
        ProviderSpec(name="gemini", transport="acp", command=("no-such-gemini-x",), auth_hint="k")
    )
    with pytest.raises(AvatarError, match="no usable provider found"):
        e.registry.default(e.settings)


def _planner(tmp_path: Path, settings: Settings, stores: dict[str, _Store]) -> Engine:
    e = Engine(settings, tmp_path, env={"HOME": str(tmp_path)}, home=tmp_path)
    for spec in e.registry.specs():
        e.catalog.use_store(spec.name, stores.get(spec.name))  # type: ignore[arg-type]
    return e


def _plan(e: Engine, provider: str | None, **kw: Any) -> tuple[str, OpenRequest]:
    plan = plan_open(e.catalog, e.settings, provider, lambda: e.registry.default(e.settings), **kw)
    return plan.provider, plan.request


def test_provider_session_block_sets_the_default_open_mode(tmp_path: Path) -> None:
    settings = parse_settings(
        {
            "providers": {
                "codex": {"session": {"continue_last": True}},
                "gemini": {"session": {"resume_id": "abc123"}},
            }
        }
    )
    e = _planner(tmp_path, settings, {"gemini": _Store([])})
    assert _plan(e, "codex") == ("codex", OpenRequest("continue"))
    assert _plan(e, "codex", session_id="x1") == ("codex", OpenRequest("new", "x1"))
    assert _plan(e, "gemini") == ("gemini", OpenRequest("resume", "abc123"))
    assert _plan(e, "claude") == ("claude", OpenRequest("new"))


def test_resume_hands_the_bridge_the_resolved_session(tmp_path: Path) -> None:
    native = SessionInfo(id="01JDNATIVE", provider="native", cwd=str(tmp_path))
    claude = SessionInfo(id="4f1e-claude", provider="claude", cwd=str(tmp_path))
    e = _planner(tmp_path, Settings(), {"native": _Store([native]), "claude": _Store([claude])})
    assert _plan(e, None, resume="01JD") == ("native", OpenRequest("resume", native.id, native))
    # claude-acp reads Claude Code's own sessions: the same session, seen through claude-acp.
    provider, request = _plan(e, "claude-acp", resume="4f1e")
    assert provider == "claude-acp" and request.info is not None
    assert (request.info.id, request.info.provider) == (claude.id, "claude-acp")
    # An id no store knows may still be known to the agent itself.
    assert _plan(e, "codex", resume="zz9") == ("codex", OpenRequest("resume", "zz9"))


def test_another_provider_s_session_is_a_usage_error_naming_its_owner(tmp_path: Path) -> None:
    native = SessionInfo(id="01JDNATIVE", provider="native", cwd=str(tmp_path))
    e = _planner(tmp_path, Settings(), {"native": _Store([native]), "codex": _Store([])})
    with pytest.raises(UsageError) as caught:
        _plan(e, "codex", resume="01JD")
    message = str(caught.value)
    assert "belongs to native" in message and f"--from {native.id}" in message


def test_a_session_opened_on_claude_acp_stays_claude_acp_s(tmp_path: Path) -> None:
    """claude and claude-acp read the same files; avatar remembers which one opened a session."""
    mine = SessionInfo(id="5a5a-acp", provider="claude", cwd=str(tmp_path))
    other = SessionInfo(id="6b6b-cli", provider="claude", cwd=str(tmp_path))
    e = _planner(tmp_path, Settings(), {"claude": _Store([mine, other])})
    e.catalog.opened("claude-acp", mine.id, str(tmp_path), None)
    assert e.find("5a5a").provider == "claude-acp"
    assert e.find("6b6b").provider == "claude"
    assert {s.id: s.provider for s in e.sessions(any_cwd=True)} == {
        mine.id: "claude-acp",
        other.id: "claude",
    }
    assert _plan(e, None, resume="5a5a")[0] == "claude-acp"
