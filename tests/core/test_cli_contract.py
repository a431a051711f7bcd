"""The CLI's output contract (docs/design.md §3): one-line errors, exit codes, light start-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("acp", "openai", "anthropic", "prompt_toolkit", "rich")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "AVATAR_HOME": str(tmp_path / "avatar-home"),
        "AVATAR_CONFIG": str(tmp_path / "no-config.yaml"),
        "LANG": "C.UTF-8",
    }


def avatar(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "avatar", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_import_nothing_heavy(flag: str, env: dict[str, str]) -> None:
    code = (
        "import sys\n"
        "from avatar.cli import main\n"
        f"try:\n    main([{flag!r}])\nexcept SystemExit:\n    pass\n"
        f"print('HEAVY', sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "HEAVY []" in out.stdout
    assert ("avatar 0." in out.stdout) if flag == "--version" else ("session" in out.stdout)


def test_model_validation_works_without_pydantic_s_plugin_scan(env: dict[str, str]) -> None:
    """The CLI stands in for pydantic's plugin loader (a start-up cost, docs/design.md §1): models
    still validate and reject, and `importlib.metadata` is never imported for it."""
    code = (
        "import sys\n"
        "from avatar.cli.startup import without_pydantic_plugins\n"
        "without_pydantic_plugins()\n"
        "from avatar.core.config import InvalidSettings, parse_settings\n"
        "assert parse_settings({'permission': 'allow'}).permission == 'allow'\n"
        "try:\n    parse_settings({'permission': 'maybe'})\n"
        "except InvalidSettings:\n    print('REJECTED')\n"
        "print('METADATA', 'importlib.metadata' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "REJECTED" in out.stdout and "METADATA False" in out.stdout


def test_version_prints_the_package_version(env: dict[str, str]) -> None:
    from avatar import __version__

    out = avatar(env, "--version")
    assert (out.returncode, out.stdout) == (0, f"avatar {__version__}\n")


def _one_line_error(out: subprocess.CompletedProcess[str], code: int, needle: str) -> None:
    assert out.returncode == code, (out.stdout, out.stderr)
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("avatar: ") and needle in lines[0]
    assert "Traceback" not in out.stderr


def test_unknown_provider_is_a_usage_error(env: dict[str, str]) -> None:
    _one_line_error(avatar(env, "-p", "nosuch", "chat", "hi"), 2, "unknown provider 'nosuch'")


def test_broken_config_is_a_usage_error_naming_file_and_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("providers:\n  codex: [unclosed\n")
    _one_line_error(avatar(env, "-c", str(broken), "providers"), 2, f"config error: {broken}:")
    broken.write_text("providers:\n  codex:\n    exe: codex-acp\n")
    _one_line_error(
        avatar(env, "-c", str(broken), "providers"),
        2,
        f"{broken}:3: providers.codex.exe: unknown key",
    )


def test_a_preset_naming_a_missing_provider_is_a_config_error_naming_file_key_and_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    """Said when the config loads, even when the preset is not chosen: a typo in a preset
    would otherwise surface, without a place, only the day it is used."""
    config = tmp_path / "config.yaml"
    config.write_text("model: gpt-4o\npresets:\n  fast:\n    model: x\n    provider: codx\n")
    expected = f"config error: {config}:5: presets.fast.provider: unknown provider 'codx'"
    for args in (["providers"], ["--preset", "fast", "chat", "hi"]):
        _one_line_error(avatar(env, "-c", str(config), *args), 2, expected)
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".avatar.yaml").write_text("presets:\n  ok:\n    provider: mine\n")
    config.write_text("providers:\n  mine:\n    transport: acp\n    command: [mine-acp]\n")
    listed = avatar(env, "-c", str(config), "providers", "--json", cwd=project)
    assert listed.returncode == 0, listed.stderr  # a provider the config defines is known


def test_unknown_session_is_a_usage_error(env: dict[str, str]) -> None:
    _one_line_error(avatar(env, "session", "info", "zzz"), 2, "no session matches 'zzz'")


def test_path_like_session_id_is_a_usage_error(env: dict[str, str]) -> None:
    _one_line_error(avatar(env, "session", "info", "../../etc/passwd"), 2, "invalid session id")


def test_click_usage_errors_are_one_line_too(env: dict[str, str]) -> None:
    _one_line_error(avatar(env, "--bogus"), 2, "--bogus")
    _one_line_error(avatar(env, "session", "info"), 2, "ID")
    _one_line_error(avatar(env, "chat", "--permission", "sometimes", "hi"), 2, "sometimes")


def test_conflicting_open_flags_are_a_usage_error(env: dict[str, str]) -> None:
    _one_line_error(avatar(env, "chat", "--resume", "a", "--continue", "hi"), 2, "only one of")


def test_session_list_on_a_fresh_home_is_empty(env: dict[str, str], tmp_path: Path) -> None:
    out = avatar(env, "session", "list", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    # Nothing on stdout (a script reading it sees no rows, not a header); the notice on stderr.
    assert out.stdout == "" and out.stderr == f"no sessions in {tmp_path.resolve()}\n"
    out = avatar(env, "session", "list", "--all", "--json", cwd=tmp_path)
    assert (out.returncode, json.loads(out.stdout)) == (0, [])


def test_providers_json_shape(env: dict[str, str]) -> None:
    out = avatar(env, "providers", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    names = [r["name"] for r in rows]
    assert names[:5] == ["native", "claude", "claude-acp", "codex", "gemini"]
    keys = {"name", "transport", "found", "path", "version", "capabilities", "logged_in", "hint"}
    for r in rows:
        assert set(r) == {*keys, "sandbox", "state_dirs", "state_guessed"}
        assert r["logged_in"] in (True, False, None) and isinstance(r["hint"], str)
    native = rows[0]
    assert native["found"] and "fork" in native["capabilities"]
    # The kernel's walls: around the agent process, or the commands the native agent runs.
    assert [r["sandbox"] for r in rows[:5]] == ["commands", "agent", "agent", "agent", "agent"]


def test_providers_name_the_faces_for_other_clients(env: dict[str, str]) -> None:
    """`avatar providers` names avatar acp and avatar mcp after the table; `--json` stays
    the array of providers."""
    out = avatar(env, "providers")
    assert out.returncode == 0, out.stderr
    listed = out.stdout.split("avatar for other clients:\n")[1].splitlines()
    assert [line.split(":")[0].strip() for line in listed] == ["avatar acp", "avatar mcp"]
    rows = json.loads(avatar(env, "providers", "--json").stdout)
    assert "acp" not in {r["name"] for r in rows}


def test_providers_say_when_the_sandbox_is_off(env: dict[str, str], tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("scope:\n  sandbox: off\n")
    rows = json.loads(avatar(env, "-c", str(cfg), "providers", "--json").stdout)
    assert {r["sandbox"] for r in rows} == {"off"}


def test_config_acp_agent_appears_in_providers(env: dict[str, str], tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "providers:\n  my-agent:\n    transport: acp\n    command: [no-such-agent-bin]\n"
    )
    out = avatar(env, "-c", str(cfg), "providers", "--json")
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert rows["my-agent"]["transport"] == "acp"
    assert rows["my-agent"]["found"] is False
