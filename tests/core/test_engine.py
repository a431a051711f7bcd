"""Engine: registry from config, fallbacks with notices, handoffs across providers, id lookup."""

from __future__ import annotations

from pathlib import Path

import pytest

from avatar.bridges.base import OpenRequest
from avatar.config import Settings
from avatar.engine import Engine
from avatar.errors import AvatarError, UsageError
from avatar.events import BaseEvent, Notice, SessionStarted, TextDelta
from avatar.providers import ProviderSpec
from avatar.sessions.types import SessionInfo
from tests.core.fake_bridge import FakeBridge

FAKE = "tests.core.fake_bridge:FakeBridge"


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    e = Engine(
        Settings(), tmp_path, env={"PATH": "/nonexistent", "HOME": str(tmp_path)}, home=tmp_path
    )
    for name in ("plain", "other-resumable"):
        e.registry[name] = ProviderSpec(name=name, transport="acp", bridge=FAKE)
    FakeBridge.prompts = []
    return e


def test_registry_has_builtins_and_config_acp_agents(tmp_path: Path) -> None:
    settings = Settings.model_validate(
        {
            "providers": {
                "my-agent": {"transport": "acp", "command": ["pi-acp", "--x"]},
                "codex": {"executable": "/opt/codex-acp", "env": {"A": "1"}},
            }
        }
    )
    e = Engine(settings, tmp_path, env={}, home=tmp_path)
    assert list(e.registry)[:5] == ["native", "claude", "claude-acp", "codex", "gemini"]
    assert e.registry["my-agent"].command == ("pi-acp", "--x")
    assert e.registry["my-agent"].bridge == "avatar.bridges.acp:ACPBridge"
    assert e.registry["codex"].command == ("/opt/codex-acp",)
    assert e.provider_env(e.registry["codex"])["A"] == "1"
    with pytest.raises(UsageError, match="unknown provider 'nope'"):
        e.spec("nope")


async def test_resume_unsupported_opens_new_session_with_notice(engine: Engine) -> None:
    seen: list[BaseEvent] = []
    engine.listeners.append(seen.append)
    started = await engine.open_on("plain", OpenRequest("resume", "abc"))
    assert started.how == "new"
    notices = [e.message for e in seen if isinstance(e, Notice)]
    assert notices == ["resuming a session is not supported by plain; opened a new session instead"]
    assert any(isinstance(e, SessionStarted) for e in seen)
    await engine.stop()


async def test_switch_provider_hands_the_conversation_over(engine: Engine) -> None:
    await engine.open_on("plain", OpenRequest("new"))
    answer = [
        e.text async for e in engine.send("remember the word PELICAN") if isinstance(e, TextDelta)
    ]
    assert answer
    started = await engine.switch_provider("other-resumable")
    assert started.provider == "other-resumable" and engine.bridge is not None
    [e async for e in engine.send("what was the word?")]
    first_on_new = FakeBridge.prompts[-1]
    assert "remember the word PELICAN" in first_on_new  # the handoff
    assert first_on_new.startswith("what was the word?")
    [e async for e in engine.send("and again")]
    assert FakeBridge.prompts[-1] == "and again"  # the seed is used once
    await engine.stop()


async def test_fresh_switch_carries_nothing(engine: Engine) -> None:
    await engine.open_on("plain", OpenRequest("new"))
    [e async for e in engine.send("secret context")]
    await engine.switch_provider("other-resumable", handoff=False)
    [e async for e in engine.send("hi")]
    assert FakeBridge.prompts[-1] == "hi"
    await engine.stop()


class _Store:
    def __init__(self, sessions: list[SessionInfo]) -> None:
        self.sessions = sessions
        self.warnings: list[str] = []

    def list(self, cwd: Path | None) -> list[SessionInfo]:
        return self.sessions

    def find(self, prefix: str) -> list[SessionInfo]:
        return [s for s in self.sessions if s.id.startswith(prefix)]


def test_find_session_by_prefix_across_providers(engine: Engine) -> None:
    engine.registry = {
        "a": ProviderSpec(name="a", transport="acp", bridge=FAKE, store="x:A"),
        "b": ProviderSpec(name="b", transport="acp", bridge=FAKE, store="x:B"),
    }
    engine._stores = {
        "a": _Store([SessionInfo(id="0123-aaaa", provider="a")]),
        "b": _Store([SessionInfo(id="0124-bbbb", provider="b"), SessionInfo(id="9", provider="b")]),
    }
    assert engine.find_session("0124").provider == "b"
    with pytest.raises(UsageError, match=r"ambiguous: 0123-aaaa \(a\), 0124-bbbb \(b\)"):
        engine.find_session("012")
    with pytest.raises(UsageError, match="no session matches 'zz'"):
        engine.find_session("zz")
    with pytest.raises(UsageError, match="invalid session id"):
        engine.find_session("../x")
    assert [s.id for s in engine.list_sessions()] == ["0123-aaaa", "0124-bbbb", "9"]


def test_no_usable_provider_says_what_it_looked_for(tmp_path: Path) -> None:
    e = Engine(
        Settings(), tmp_path, env={"PATH": "/nonexistent", "HOME": str(tmp_path)}, home=tmp_path
    )
    e.registry["claude"] = ProviderSpec(
        name="claude", transport="stream-json", command=("no-such-claude-x",), auth_hint="log in"
    )
    e.registry["codex"] = ProviderSpec(
        name="codex", transport="acp", command=("no-such-codex-x",), auth_hint="key"
    )
    e.registry["gemini"] = ProviderSpec(
        name="gemini", transport="acp", command=("no-such-gemini-x",), auth_hint="key"
    )
    with pytest.raises(AvatarError, match="no usable provider found"):
        e.default_provider()


def test_provider_session_block_sets_the_default_open_mode(tmp_path: Path) -> None:
    from avatar.cli.chat import plan_open

    settings = Settings.model_validate(
        {
            "providers": {
                "codex": {"session": {"continue_last": True}},
                "gemini": {"session": {"resume_id": "abc123"}},
            }
        }
    )
    e = Engine(settings, tmp_path, env={"HOME": str(tmp_path)}, home=tmp_path)
    e._stores = {"gemini": _Store([])}
    assert plan_open(e, "codex") == ("codex", OpenRequest("continue"))
    assert plan_open(e, "codex", session_id="x1") == ("codex", OpenRequest("new", "x1"))
    assert plan_open(e, "gemini") == ("gemini", OpenRequest("resume", "abc123"))
    assert plan_open(e, "claude") == ("claude", OpenRequest("new"))
