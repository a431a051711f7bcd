"""Acceptance (issue 20, item 3): a project `.avatar.yaml` nobody trusted runs nothing it names
until `avatar trust`, and after an edit it runs nothing again (docs/design.md §10).

The project ships `agent.sh`, which leaves a marker and then runs the real codex-acp, and names
it as codex's executable; it also names an MCP server (the test kit's stamp server, which logs
every request it gets). `avatar chat`, `avatar repl` and `avatar providers` (which asks the
executable for its version) are run against the fake model server each time; what ran is read
off the file system.
"""

from __future__ import annotations

import json
import stat

import pytest

from tests.support import mcp_server
from tests.support.drive import Avatar
from tests.support.drive import avatar as run
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


class Project:
    """The hostile project: its config, the agent script it names, and their traces."""

    def __init__(self, home: AgentHome, *, command: bool = False) -> None:
        self.root = home.workdir
        self.config = self.root / ".avatar.yaml"
        # In the project: what the agent runs writes nowhere else (its sandbox).
        self.marker = self.root / "agent-ran"
        self.mcp_log = self.root / "stamp.log"
        script = self.root / "agent.sh"
        script.write_text(f'#!/bin/sh\ntouch "{self.marker}"\nexec codex-acp "$@"\n')
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        codex = (
            {"command": ["sh", "-c", f'touch "{self.marker}"; exec codex-acp']}
            if command
            else {"executable": "./agent.sh"}
        )
        stamp, *args = mcp_server.command(self.mcp_log)
        data = {
            "providers": {"codex": codex},
            "mcp_servers": {"stamp": {"command": stamp, "args": args}},
        }
        self.config.write_text(json.dumps(data, indent=1) + "\n")

    @property
    def mcp_ran(self) -> bool:
        """The stamp server got a request (it logs each to `<log>.rpc`)."""
        return self.mcp_log.with_name(self.mcp_log.name + ".rpc").exists()

    def clear(self) -> None:
        self.marker.unlink(missing_ok=True)
        self.mcp_log.with_name(self.mcp_log.name + ".rpc").unlink(missing_ok=True)


@pytest.fixture
def avatar(agent_home: AgentHome) -> Avatar:
    require_bridges("codex-acp")
    return Avatar(agent_home, avatar_env(agent_home))


def run_each(avatar: Avatar, project: Project) -> dict[str, tuple[bool, list[str]]]:
    """Run chat, repl (a prompt, then /quit) and providers; for each: did anything of the
    project's run, and the notice lines it printed."""
    out: dict[str, tuple[bool, list[str]]] = {}
    for name, args, stdin in (
        ("chat", ("-p", "codex", "chat", "hello"), None),
        ("repl", ("-p", "codex", "repl"), "hello\n/quit\n"),
        ("providers", ("providers",), None),
    ):
        project.clear()
        proc = run(avatar.env, project.root, *args, stdin=stdin, timeout=150)
        assert proc.returncode == 0, f"{name}:\n{proc.stdout}\n{proc.stderr}"
        ran = project.marker.exists() or project.mcp_ran
        out[name] = (ran, avatar.notices(proc))
    return out


def test_untrusted_runs_nothing_trusted_runs_edited_runs_nothing(
    avatar: Avatar, model_server: FakeModelServer
) -> None:
    project = Project(avatar.home)
    notice = (
        f"notice: {project.config} is not trusted: ignored providers.codex.executable, "
        "mcp_servers.stamp; run `avatar trust` to apply them (or --trust for this run)"
    )
    untrusted = run_each(avatar, project)
    assert untrusted == {name: (False, [notice]) for name in ("chat", "repl", "providers")}

    avatar("trust")
    trusted = run_each(avatar, project)
    assert trusted == {name: (True, []) for name in ("chat", "repl", "providers")}
    project.clear()
    avatar("-p", "codex", "chat", "hello")
    assert project.marker.exists() and project.mcp_ran  # both: the agent and the MCP server

    project.config.write_text(project.config.read_text() + "# edited\n")
    edited = run_each(avatar, project)
    changed = notice.replace("is not trusted", "changed since it was trusted")
    assert edited == {name: (False, [changed]) for name in ("chat", "repl", "providers")}


def test_a_provider_command_runs_only_once_trusted(
    avatar: Avatar, model_server: FakeModelServer
) -> None:
    project = Project(avatar.home, command=True)
    proc = avatar("-p", "codex", "chat", "hello")
    assert proc.stdout.rstrip().endswith(model_server.default_text)
    assert not project.marker.exists() and not project.mcp_ran
    proc = avatar("--trust", "-p", "codex", "chat", "hello")  # this run only
    assert project.marker.exists() and avatar.notices(proc) == []
    project.clear()
    avatar("-p", "codex", "chat", "hello")
    assert not project.marker.exists()
