"""Per-session settings (docs/design.md §4): the record file, and what the engine does with it.

The end-to-end proof with the real CLI and native agent is in tests/native/test_cli.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from avatar.bridges.base import OpenRequest
from avatar.core.config import Settings, parse_settings
from avatar.core.events import BaseEvent, Notice
from avatar.engine.engine import Engine
from avatar.engine.settings import SettingsSource
from avatar.providers.registry import ProviderSpec
from avatar.sessions.settings_log import SessionSettings, SessionSettingsLog
from tests.core.fake_bridge import FakeBridge

PRESETS = {"reviewer": {"system_prompt": "review only", "permission": "deny"}}


def test_last_record_wins_and_broken_lines_are_skipped(tmp_path: Path) -> None:
    log = SessionSettingsLog(tmp_path)
    assert log.get("s1") is None  # no file yet
    log.put(SessionSettings(provider="codex", id="s1", preset="a"))
    log.put(SessionSettings(provider="codex", id="s2", preset="b"))
    with log.path.open("ab") as f:
        f.write(b'{"provider": "codex", "id": "s1", "preset": \n')  # a torn line
    log.put(SessionSettings(provider="codex", id="s1", overrides={"model": "m"}))
    with log.path.open("ab") as f:
        f.write(b'{"id": "s1", "garbage"\n')
    got = log.get("s1")
    assert got is not None and (got.preset, got.overrides) == (None, {"model": "m"})
    assert log.get("s2").preset == "b"  # type: ignore[union-attr]


class _Config:
    """Stands in for the config files: `presets` can change between runs."""

    def __init__(self) -> None:
        self.presets: dict[str, Any] = {k: dict(v) for k, v in PRESETS.items()}

    def load(self, preset: str | None, overrides: Mapping[str, Any]) -> Settings:
        settings = parse_settings({"presets": self.presets})
        if preset:
            settings = settings.apply_preset(preset)
        return parse_settings({**asdict(settings), **overrides})


def _engine(tmp_path: Path, config: _Config, preset: str | None, **flags: Any) -> Engine:
    source = SettingsSource(load=config.load, flags=flags, preset_given=preset is not None)
    e = Engine(
        config.load(preset, {k: v for k, v in flags.items() if v is not None}),
        tmp_path,
        env={"PATH": "/nonexistent", "HOME": str(tmp_path)},
        home=tmp_path,
        source=source,
    )
    e.registry.add(
        ProviderSpec(
            name="fake-resumable", transport="acp", bridge="tests.core.fake_bridge:FakeBridge"
        )
    )
    return e


async def _start(tmp_path: Path, config: _Config) -> str:
    first = _engine(tmp_path, config, "reviewer", permission="allow")
    started = await first.agent.open_on("fake-resumable", OpenRequest("new"))
    await first.close()
    record = SessionSettingsLog(tmp_path).get(started.session_id)
    assert record is not None
    assert (record.preset, record.overrides) == ("reviewer", {"permission": "allow"})
    return started.session_id


async def test_resume_applies_the_preset_of_today_then_the_session_s_overrides(
    tmp_path: Path,
) -> None:
    config = _Config()
    sid = await _start(tmp_path, config)
    config.presets["reviewer"]["system_prompt"] = "review, then summarise"
    later = _engine(tmp_path, config, None)
    await later.agent.open_on("fake-resumable", OpenRequest("resume", sid))
    assert later.settings.system_prompt == "review, then summarise"
    assert later.settings.permission == "allow"  # its own override beats the preset's deny
    assert FakeBridge.started[-1].ctx.system_prompt == "review, then summarise"
    await later.close()


async def test_a_fork_keeps_the_preset_and_overrides_of_its_parent(tmp_path: Path) -> None:
    config = _Config()
    parent = await _start(tmp_path, config)
    later = _engine(tmp_path, config, None)
    child = await later.agent.open_on("fake-resumable", OpenRequest("fork", parent))
    await later.close()
    assert child.session_id != parent
    record = SessionSettingsLog(tmp_path).get(child.session_id)
    assert record is not None
    assert (record.preset, record.overrides) == ("reviewer", {"permission": "allow"})


async def test_this_run_s_flags_and_preset_beat_the_session_s(tmp_path: Path) -> None:
    config = _Config()
    config.presets["other"] = {"system_prompt": "other prompt"}
    sid = await _start(tmp_path, config)
    later = _engine(tmp_path, config, "other", permission="ask")
    await later.agent.open_on("fake-resumable", OpenRequest("resume", sid))
    assert (later.settings.system_prompt, later.settings.permission) == ("other prompt", "ask")
    await later.close()


async def test_a_preset_gone_from_the_config_is_a_notice_not_an_error(tmp_path: Path) -> None:
    config = _Config()
    sid = await _start(tmp_path, config)
    del config.presets["reviewer"]
    later = _engine(tmp_path, config, None)
    seen: list[BaseEvent] = []
    later.subscribe(seen.append)
    started = await later.agent.open_on("fake-resumable", OpenRequest("resume", sid))
    assert started.how == "resumed"
    assert later.settings.permission == "allow" and later.settings.system_prompt is None
    [notice] = [e for e in seen if isinstance(e, Notice)]
    assert "no longer defines" in notice.message and notice.level == "warning"
    await later.close()


@pytest.mark.parametrize("preset", [None, "reviewer"])
async def test_nothing_of_its_own_writes_nothing(tmp_path: Path, preset: str | None) -> None:
    config = _Config()
    engine = _engine(tmp_path, config, preset)
    await engine.agent.open_on("fake-resumable", OpenRequest("new"))
    await engine.close()
    log = SessionSettingsLog(tmp_path)
    assert log.path.exists() == (preset is not None)


async def test_a_model_switched_mid_session_is_remembered(tmp_path: Path) -> None:
    """What the REPL's `/model` and `/preset` do: record the open session's settings again."""
    config = _Config()
    engine = _engine(tmp_path, config, None)
    started = await engine.agent.open_on("fake-resumable", OpenRequest("new"))
    assert SessionSettingsLog(tmp_path).get(started.session_id) is None
    await engine.set_model("bigger-model")
    mid = SessionSettingsLog(tmp_path).get(started.session_id)
    assert mid is not None and (mid.preset, mid.overrides) == (None, {"model": "bigger-model"})
    await engine.apply_preset("reviewer")
    await engine.close()
    record = SessionSettingsLog(tmp_path).get(started.session_id)
    assert record is not None and (record.preset, record.overrides) == ("reviewer", {})
    later = _engine(tmp_path, config, None)
    await later.agent.open_on("fake-resumable", OpenRequest("resume", started.session_id))
    assert later.settings.system_prompt == "review only"
    await later.close()
