"""`avatar providers`: providers as data, login state, capabilities learned from the agent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from avatar.bridges.base import SessionCapabilities
from avatar.core.config import Settings
from avatar.providers.facts import CapabilityCache, configured_model, hint, logged_in
from avatar.providers.registry import CORE, shipped


def test_the_shipped_table_has_the_core_providers_and_known_acp_agents() -> None:
    table = shipped()
    assert list(table)[:5] == list(CORE)
    for name in ("qwen-code", "opencode", "copilot"):
        spec = table[name]
        assert spec.transport == "acp" and spec.command and spec.install_hint
        assert not spec.builtin  # offered only when installed
    assert table["gemini"].quirks >= {"same_minute_load", "late_replay"}


def test_login_state_from_keys_files_and_codex_config(tmp_path: Path) -> None:
    table, settings = shipped(), Settings()
    env = {"HOME": str(tmp_path)}
    assert logged_in(table["claude"], env, settings) is False
    assert hint(table["claude"], True, False) == "claude /login"
    assert logged_in(table["claude"], {**env, "ANTHROPIC_API_KEY": "k"}, settings) is True
    creds = tmp_path / ".claude" / ".credentials.json"
    creds.parent.mkdir()
    creds.write_text("{}")
    assert logged_in(table["claude"], env, settings) is True
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    codex_env = {**env, "CODEX_HOME": str(codex_home)}
    assert logged_in(table["codex"], codex_env, settings) is False
    (codex_home / "config.toml").write_text('model_provider = "fake"\n')
    assert logged_in(table["codex"], codex_env, settings) is True
    assert logged_in(table["cline"], env, settings) is None  # nothing to look at: unknown
    assert hint(table["gemini"], False, None).startswith("npm install -g @google/gemini-cli")


def test_capabilities_are_remembered_per_agent_version(tmp_path: Path) -> None:
    cache = CapabilityCache(tmp_path)
    assert cache.get("codex", "2.6.0") is None
    cache.record("codex", "2.6.0", SessionCapabilities(can_list=True, can_delete=True))
    assert cache.get("codex", "2.6.0") == ["list", "delete"]
    assert cache.get("codex", "2.7.0") is None  # another version: unknown again
    cache.path.write_text("not json")
    assert cache.get("codex", "2.6.0") is None  # a broken cache is only a cache


def test_an_agent_found_on_path_appears_in_providers(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    qwen = bin_dir / "qwen"
    qwen.write_text("#!/bin/sh\necho 0.0.1\n")
    qwen.chmod(0o755)
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "AVATAR_HOME": str(tmp_path / "data"),
        "AVATAR_CONFIG": str(tmp_path / "none.yaml"),
    }
    out = subprocess.run(
        [sys.executable, "-m", "avatar", "providers", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert rows["qwen-code"]["found"] and rows["qwen-code"]["path"] == str(qwen)
    assert rows["qwen-code"]["capabilities"] is None  # never started: unknown
    assert "opencode" not in rows  # not installed: not offered


def test_the_model_an_agent_is_configured_to_run(tmp_path: Path) -> None:
    table, env = shipped(), {"HOME": str(tmp_path)}
    assert configured_model(table["claude"], env) is None  # nothing set: unknown
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text('{"model": "opus"}')
    assert configured_model(table["claude"], env) == "opus"
    assert configured_model(table["claude"], env | {"ANTHROPIC_MODEL": "haiku"}) == "haiku"
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text('model = "gpt-5"\n[x]\nmodel = "no"\n')
    assert configured_model(table["codex"], env) == "gpt-5"
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text('{"model": {"name": "gemini-2.5-pro"}}')
    assert configured_model(table["gemini"], env) == "gemini-2.5-pro"
    (tmp_path / ".gemini" / "settings.json").write_text("{broken")
    assert configured_model(table["gemini"], env) is None


def test_opencode_login_where_opencode_keeps_it(tmp_path: Path) -> None:
    """opencode keeps its credentials under its XDG data home, takes any provider's key from
    the environment or its own config, and has free models: a key or its auth file says
    "yes", and finding neither says "unknown", never "no" (it may well work)."""
    spec, settings = shipped()["opencode"], Settings()
    data = tmp_path / "data"
    env = {"HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(data)}
    assert logged_in(spec, env, settings) is None
    assert logged_in(spec, {**env, "OPENROUTER_API_KEY": "k"}, settings) is True
    (data / "opencode").mkdir(parents=True)
    (data / "opencode" / "auth.json").write_text("{}")
    assert logged_in(spec, env, settings) is True
