"""Config `mcp_servers` → what each kind of agent is handed (the end-to-end proof with real
agents is tests/integration/test_mcp_servers.py).

Stdio commands are resolved the same way for ACP agents and Claude Code (absolute, or reported
when missing), and Claude Code gets env values and headers through its environment, never on
its command line.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from avatar.bridges.claude.argv import build_argv, mcp_env
from avatar.bridges.mcp import build_mcp_servers, stdio_command
from avatar.core.config import McpServer, Settings

SECRET = "sk-test-0123456789abcdef"


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_stdio_command_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = executable(tmp_path / "bin" / "my-mcp")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert stdio_command(McpServer(command="my-mcp")) == str(server)
    assert stdio_command(McpServer(command="./bin/my-mcp")) == str(server)
    assert stdio_command(McpServer(command="no-such-mcp-server")) is None
    assert stdio_command(McpServer(url="http://127.0.0.1:9/mcp")) is None


def test_acp_list_reports_a_missing_command(tmp_path: Path) -> None:
    server = executable(tmp_path / "srv")
    servers = {
        "ok": McpServer(command=str(server), args=["--x"], env={"K": "v"}),
        "gone": McpServer(command="no-such-mcp-server"),
    }
    sent, skipped = build_mcp_servers(servers, None)
    assert sent == [
        {
            "name": "ok",
            "command": str(server),
            "args": ["--x"],
            "env": [{"name": "K", "value": "v"}],
        }
    ]
    assert skipped == ["MCP server 'gone' not passed: command 'no-such-mcp-server' not found"]


def test_claude_gets_secrets_through_its_environment_not_argv() -> None:
    servers = {
        "files": McpServer(command="srv", env={"TOKEN": SECRET, "MODE": "fast"}),
        "web": McpServer(url="http://127.0.0.1:9/mcp", headers={"Authorization": SECRET}),
    }
    argv = build_argv(
        ("claude",),
        "/bin/claude",
        settings=Settings(mcp_servers=servers),
        provider="claude",
        model=None,
        system_prompt=None,
        add_dirs=[],
        session_args=[],
    )
    assert not any(SECRET in a for a in argv)
    env = mcp_env(servers)
    data = json.loads(argv[argv.index("--mcp-config") + 1])["mcpServers"]
    # Each `${VAR}` reference names a variable that holds exactly the configured value.
    expanded = {k: env[v[2:-1]] for k, v in data["files"]["env"].items()}
    assert expanded == {"TOKEN": SECRET, "MODE": "fast"}
    assert env[data["web"]["headers"]["Authorization"][2:-1]] == SECRET
