"""`avatar mcp --install claude|codex|gemini` (docs/design.md §12): the entry goes into the
agent's user config, shown first and asked for; every other entry and key is kept, comments
and all in codex's TOML; the same install twice changes nothing; a file avatar cannot edit
safely is left as it was, with one line. `env` (tests/core/conftest.py): an empty home. The
real agents reading the entry: tests/integration/test_mcp_face.py."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support.drive import avatar

AVATAR = str(Path(sys.executable).parent / "avatar")


def install(env: dict[str, str], *args: str, code: int = 0) -> str:
    done = avatar(env, Path(env["HOME"]), "mcp", "--install", *args)
    assert done.returncode == code, done.stderr
    assert done.stdout == ""
    return done.stderr


def test_claude_gets_a_user_server_and_keeps_the_rest(env: dict[str, str]) -> None:
    config = Path(env["HOME"]) / ".claude.json"
    other = {"type": "stdio", "command": "/usr/bin/other", "args": []}
    before = {"numStartups": 7, "projects": {"/x": {"a": 1}}, "mcpServers": {"other": other}}
    config.write_text(json.dumps(before))

    said = install(env, "claude", "--yes")

    entry = {"type": "stdio", "command": AVATAR, "args": ["mcp"], "env": {}}
    entry["env"] = {"AVATAR_HOME": env["AVATAR_HOME"], "AVATAR_CONFIG": env["AVATAR_CONFIG"]}
    assert json.loads(config.read_text()) == {
        **before,
        "mcpServers": {"other": other, "avatar": entry},
    }
    assert f"claude's user config {config}: add" in said
    assert json.dumps({"mcpServers": {"avatar": entry}}, indent=2) in said
    written = config.read_bytes()
    assert "already has this avatar entry" in install(env, "claude", "--yes")
    assert config.read_bytes() == written


def test_claude_config_dir_and_a_symlinked_file(env: dict[str, str], tmp_path: Path) -> None:
    elsewhere = tmp_path / "dotfiles" / "claude.json"
    elsewhere.parent.mkdir()
    elsewhere.write_text("{}")
    configured = tmp_path / "claude-config"
    configured.mkdir()
    (configured / ".claude.json").symlink_to(elsewhere)
    install({**env, "CLAUDE_CONFIG_DIR": str(configured)}, "claude", "--yes")
    assert (configured / ".claude.json").is_symlink()
    servers = json.loads(elsewhere.read_text())["mcpServers"]
    assert servers["avatar"]["env"]["CLAUDE_CONFIG_DIR"] == str(configured)
    assert not (Path(env["HOME"]) / ".claude.json").exists()


CODEX_BEFORE = """\
# my codex settings
model = "gpt-5"  # the one I like

[mcp_servers.other]
command = "other"

[mcp_servers.other.env]
TOKEN_FILE = "/x"

[profiles.fast]
model = "gpt-5-mini"
"""


def test_codex_gets_a_table_and_its_file_keeps_its_comments(env: dict[str, str]) -> None:
    codex_home = Path(env["HOME"]) / "codex"
    codex_home.mkdir()
    config = codex_home / "config.toml"
    config.write_text(CODEX_BEFORE)
    env = {**env, "CODEX_HOME": str(codex_home)}

    install(env, "codex", "--yes")
    text = config.read_text()
    assert text.startswith(CODEX_BEFORE)
    data = tomllib.loads(text)
    assert data["mcp_servers"]["other"] == {"command": "other", "env": {"TOKEN_FILE": "/x"}}
    assert data["profiles"] == {"fast": {"model": "gpt-5-mini"}}
    where = {"AVATAR_HOME": env["AVATAR_HOME"], "AVATAR_CONFIG": env["AVATAR_CONFIG"]}
    where["CODEX_HOME"] = str(codex_home)
    assert data["mcp_servers"]["avatar"] == {"command": AVATAR, "args": ["mcp"], "env": where}

    # Again with other flags: the entry is replaced, what it was is shown.
    said = install(env, "codex", "--allow-prompt", "--permission", "deny", "--yes")
    assert "replace the avatar entry" in said and 'args = ["mcp"]' in said
    data = tomllib.loads(config.read_text())
    assert data["mcp_servers"]["avatar"]["args"] == [
        "mcp",
        "--allow-prompt",
        "--permission",
        "deny",
    ]
    assert data["mcp_servers"]["avatar"]["tool_timeout_sec"] == 900
    assert config.read_text().startswith(CODEX_BEFORE)
    assert config.read_text().count("[mcp_servers.avatar]") == 1


def test_codex_entry_in_a_form_avatar_does_not_edit_is_left_alone(env: dict[str, str]) -> None:
    config = Path(env["HOME"]) / ".codex" / "config.toml"
    config.parent.mkdir()
    inline = '[mcp_servers]\navatar = { command = "old" }\n'
    config.write_text(inline)
    said = install(env, "codex", "--yes", code=2)
    assert said.startswith("avatar: ") and said.count("\n") == 1, said
    assert "[mcp_servers.avatar] table" in said
    assert config.read_text() == inline


def test_gemini_settings_keep_their_keys(env: dict[str, str], tmp_path: Path) -> None:
    gemini_home = tmp_path / "gemini-home"
    settings = gemini_home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    before = {"general": {"vimMode": True}, "mcpServers": {"x": {"command": "x"}}}
    settings.write_text(json.dumps(before))
    install({**env, "GEMINI_CLI_HOME": str(gemini_home)}, "gemini", "--yes")
    after = json.loads(settings.read_text())
    assert after["general"] == {"vimMode": True} and after["mcpServers"]["x"] == {"command": "x"}
    assert after["mcpServers"]["avatar"]["args"] == ["mcp"]
    assert "type" not in after["mcpServers"]["avatar"]


def test_a_new_file_is_private_and_nothing_is_written_without_a_yes(env: dict[str, str]) -> None:
    settings = Path(env["HOME"]) / ".gemini" / "settings.json"
    said = install(env, "gemini", code=2)  # stdin is no terminal: nobody to ask
    assert said == f"avatar: refusing to write {settings} without confirmation; pass --yes\n"
    assert not settings.exists()
    install(env, "gemini", "--yes")
    assert os.stat(settings).st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("agent", "path", "content"),
    [
        ("claude", ".claude.json", "{ not json"),
        ("claude", ".claude.json", '{"mcpServers": []}'),
        ("codex", ".codex/config.toml", "model = \n"),
        ("gemini", ".gemini/settings.json", "// a comment\n{}"),
    ],
)
def test_a_file_avatar_cannot_read_is_left_as_it_was(
    env: dict[str, str], agent: str, path: str, content: str
) -> None:
    config = Path(env["HOME"]) / path
    config.parent.mkdir(exist_ok=True)
    config.write_text(content)
    said = install(env, agent, "--yes", code=2)
    assert said.startswith(f"avatar: {config}") and said.count("\n") == 1, said
    assert "add the entry by hand" in said
    assert config.read_text() == content


def test_flags_that_go_with_others(env: dict[str, str]) -> None:
    for args, line in (
        (("--yes",), "avatar: --yes goes with --install\n"),
        (("--permission", "allow"), "avatar: --permission goes with --allow-prompt"),
    ):
        done = avatar(env, Path(env["HOME"]), "mcp", *args)
        assert done.returncode == 2 and done.stderr.startswith(line), done.stderr
