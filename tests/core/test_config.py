"""Config layering, validation and error messages (docs/design.md §4)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from avatar.core.config import Settings, load_file, parse_settings
from avatar.core.errors import ConfigError
from avatar.engine.config_layers import load_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AVATAR_CONFIG", str(tmp_path / "none.yaml"))
    for var in ("AVATAR_PROVIDER", "AVATAR_MODEL", "AVATAR_PERMISSION"):
        monkeypatch.delenv(var, raising=False)


def test_example_config_loads_as_it_is() -> None:
    data = load_file(ROOT / "examples" / "avatar.example.yaml")
    settings = parse_settings(data)
    assert settings.provider == "native"
    assert settings.providers["my-agent"].transport == "acp"
    assert settings.presets["reviewer"].permission == "deny"
    assert settings.models[0].id == "local-llama"
    assert settings.scope.deny == ["**/.env", "**/.env.*"]


def test_every_top_level_key_is_documented_in_the_example() -> None:
    data = load_file(ROOT / "examples" / "avatar.example.yaml")
    documented = set(data) | {"preset"}  # `preset` is set by --preset, not written in files
    assert {f.name for f in fields(Settings)} <= documented


def test_unknown_key_names_file_line_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("provider: claude\nproviders:\n  codex:\n    executable: x\n    colour: red\n")
    with pytest.raises(ConfigError) as e:
        load_file(bad)
    assert str(e.value) == f"config error: {bad}:5: providers.codex.colour: unknown key"


def test_bad_value_names_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("permission: maybe\n")
    with pytest.raises(ConfigError, match=r"bad.yaml:1: permission: Input should be"):
        load_file(bad)


def test_yaml_syntax_error_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\n")
    with pytest.raises(ConfigError) as e:
        load_file(bad)
    assert "\n" not in str(e.value) and str(bad) in str(e.value)


def test_layers_project_over_user_env_over_project_flags_over_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "user.yaml"
    user.write_text("provider: claude\npermission: deny\ndefault_model: a\n")
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    (project / ".avatar.yaml").write_text("provider: codex\n")
    monkeypatch.setenv("AVATAR_CONFIG", str(user))

    s = load_config(project / "sub").settings
    assert (s.provider, s.permission, s.default_model) == ("codex", "deny", "a")

    monkeypatch.setenv("AVATAR_PERMISSION", "allow")
    assert load_config(project).settings.permission == "allow"

    s = load_config(
        project, flags={"provider": "gemini", "permission": "ask", "model": None}
    ).settings
    assert (s.provider, s.permission) == ("gemini", "ask")


def test_preset_lays_over_config_and_flags_win(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "provider: native\npresets:\n  rev:\n    provider: claude\n    permission: deny\n"
        "    scope: {write: []}\n"
    )
    s = load_config(tmp_path, config_file=cfg, preset="rev").settings
    assert (s.provider, s.permission, s.preset, s.scope.write) == ("claude", "deny", "rev", [])
    s = load_config(tmp_path, config_file=cfg, preset="rev", flags={"permission": "allow"}).settings
    assert s.permission == "allow"
    with pytest.raises(ConfigError, match="unknown preset 'nope' \\(presets: rev\\)"):
        load_config(tmp_path, config_file=cfg, preset="nope")


def test_missing_explicit_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path, config_file=tmp_path / "missing.yaml")


def test_defaults_taken_without_validation_equal_validated_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no config layer, settings are the defaults built without pydantic (a start-up
    saving): they must be exactly what checking an empty config gives."""
    monkeypatch.setenv("AVATAR_CONFIG", str(tmp_path / "absent.yaml"))
    for name in ("AVATAR_PROVIDER", "AVATAR_MODEL", "AVATAR_PERMISSION"):
        monkeypatch.delenv(name, raising=False)
    assert Settings() == parse_settings({})
    assert load_config(tmp_path).settings == parse_settings({})
