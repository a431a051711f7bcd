"""Acceptance (issue 30): a repository's own agent config runs nothing until `avatar trust`
covers it, and nothing again once it changes (docs/design.md §10), through the real agents against
the fake model server.

The repository carries, for Claude Code and claude-agent-acp (which read the same files), a
`.claude/settings.json` whose SessionStart hook leaves a marker, and a `.mcp.json` naming the test
kit's stamp server, which logs every request it gets; for codex-acp a `.codex/config.toml`, and
for Gemini CLI a `.gemini/settings.json`, each naming the stamp server. The marker and the log lie
outside the project, in the agent's own state directory (the one place outside the project its
walls let it write): only the repository's config can have put them there. Each test also shows
them there once the files are trusted, so that "nothing ran" is not vacuous.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import mcp_server
from tests.support.drive import Avatar
from tests.support.drive import avatar as run
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

STARTS_WITHOUT = (
    "notice: {provider} starts without the project's agent config {files}: it is not trusted "
    "and can run programs; run `avatar trust` to use it (or --trust for this run)"
)


class Repo:
    """A hostile repository in the agent home's project, and the traces of its config."""

    def __init__(self, home: AgentHome, state_dir: Path) -> None:
        self.root = home.workdir
        self.traces = state_dir / "left-by-the-repo"
        self.traces.mkdir(parents=True)
        self.marker = self.traces / "hook-ran"
        self.mcp_log = self.traces / "stamp.log"

    def server(self) -> dict[str, object]:
        """The stamp server as an MCP server entry."""
        command, *args = mcp_server.command(self.mcp_log)
        return {"command": command, "args": args}

    @property
    def hook_ran(self) -> bool:
        return self.marker.exists()

    @property
    def mcp_ran(self) -> bool:
        """The stamp server got a request (it logs each to `<log>.rpc`)."""
        return self.mcp_log.with_name(self.mcp_log.name + ".rpc").exists()

    @property
    def ran(self) -> bool:
        return self.hook_ran or self.mcp_ran

    def clear(self) -> None:
        for path in self.traces.iterdir():
            path.unlink()

    def write(self, relative: str, data: object) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(data if isinstance(data, str) else json.dumps(data, indent=1))
        return path


def claude_repo(home: AgentHome) -> tuple[Repo, Path, Path]:
    repo = Repo(home, home.claude_dir)
    hook = {"hooks": [{"type": "command", "command": f"touch {repo.marker}"}]}
    settings = repo.write(".claude/settings.json", {"hooks": {"SessionStart": [hook]}})
    mcp = repo.write(".mcp.json", {"mcpServers": {"stamp": repo.server()}})
    return repo, settings, mcp


@pytest.fixture
def avatar(agent_home: AgentHome) -> Avatar:
    return Avatar(agent_home, avatar_env(agent_home))


def said(avatar: Avatar, *args: str) -> list[str]:
    """Run avatar; the notices it printed (its answer was the model's)."""
    proc = avatar(*args)
    assert proc.stdout.rstrip().endswith(avatar.home.server.default_text), proc.stdout
    return avatar.notices(proc)


@pytest.mark.parametrize("provider", ["claude", "claude-acp"])
def test_claude_codes_project_hooks_and_servers_run_only_once_trusted(
    avatar: Avatar, model_server: FakeModelServer, provider: str
) -> None:
    require_bridges("claude", "claude-agent-acp")
    repo, settings, mcp = claude_repo(avatar.home)
    # The user's own MCP server (avatar's config) still reaches the agent meanwhile.
    mine = avatar.home.claude_dir / "mine.log"
    command, *args = mcp_server.command(mine)
    servers = {"mcp_servers": {"mine": {"command": command, "args": args}}}
    Path(avatar.env["AVATAR_CONFIG"]).write_text(json.dumps(servers))
    notice = STARTS_WITHOUT.format(provider=provider, files=".claude/settings.json, .mcp.json")
    for permission in ("ask", "allow"):
        notices = said(avatar, "-p", provider, "chat", "--permission", permission, "hi")
        assert not repo.ran
        assert notices == [notice]
    assert mine.with_name("mine.log.rpc").exists()

    trusted = avatar("trust")
    assert trusted.stdout.splitlines() == [f"trusted: {settings}", f"trusted: {mcp}"]
    assert said(avatar, "-p", provider, "chat", "hi") == []
    assert repo.hook_ran and repo.mcp_ran

    repo.clear()
    settings.write_text(settings.read_text() + "\n")  # any change asks again
    notices = said(avatar, "-p", provider, "chat", "hi")
    assert not repo.ran
    changed = ".claude/settings.json (changed since trusted), .mcp.json"
    assert notices == [STARTS_WITHOUT.format(provider=provider, files=changed)]


def test_claude_agent_acp_holds_them_back_in_the_repl_too(
    avatar: Avatar, model_server: FakeModelServer
) -> None:
    """The REPL opens sessions through the full ACP bridge (session/new with the SDK), not the
    one-shot's: the switch reaches the agent there as well, and `--trust` lifts it for a run."""
    require_bridges("claude", "claude-agent-acp")
    repo, _, _ = claude_repo(avatar.home)
    for trust, ran in (False, False), (True, True):
        args = ["--trust"] if trust else []
        proc = run(avatar.env, repo.root, *args, "-p", "claude-acp", "repl", stdin="hello\n/quit\n")
        assert proc.returncode == 0, proc.stderr
        assert (repo.hook_ran and repo.mcp_ran) if ran else not repo.ran
        notices = [line for line in proc.stdout.splitlines() if line.startswith("notice: ")]
        assert len(notices) == (0 if trust else 1)


def test_a_hook_the_model_writes_does_not_run_in_the_next_session(
    avatar: Avatar, model_server: FakeModelServer
) -> None:
    """claude-agent-acp reads the project's settings at each session it opens, on the agent
    process started before: a SessionStart hook the model wrote in one session (its Write
    tool, allowed) must not run when the REPL's /new opens the next one."""
    require_bridges("claude", "claude-agent-acp")
    repo = Repo(avatar.home, avatar.home.claude_dir)
    hook = {"hooks": [{"type": "command", "command": f"touch {repo.marker}"}]}
    settings = repo.root / ".claude" / "settings.json"
    written = json.dumps({"hooks": {"SessionStart": [hook]}})
    write = Reply.tool_call("Write", {"file_path": str(settings), "content": written})
    model_server.script("anthropic", write, Reply.text("written"))
    stdin = "write it\n/new\nhello\n/quit\n"
    proc = run(avatar.env, repo.root, "-p", "claude-acp", "repl", "--permission", "allow",
               stdin=stdin, timeout=240)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert settings.exists()  # the model wrote it
    assert not repo.hook_ran
    assert proc.stdout.count("notice: claude-acp starts without") == 1


def held_until_trusted(avatar: Avatar, provider: str, repo: Repo, config: Path) -> None:
    """`config`'s MCP server does not run on `avatar -p PROVIDER chat` (one notice names the
    file), `avatar trust` trusts it, and then it runs."""
    notices = said(avatar, "-p", provider, "chat", "hi")
    assert not repo.ran
    shown = config.relative_to(repo.root)
    assert notices == [STARTS_WITHOUT.format(provider=provider, files=shown)]
    assert avatar("trust").stdout == f"trusted: {config}\n"
    assert said(avatar, "-p", provider, "chat", "hi") == []
    assert repo.mcp_ran


def codex_repo(home: AgentHome) -> tuple[Repo, Path]:
    repo = Repo(home, Path(home.env["CODEX_HOME"]))
    server = repo.server()
    config = repo.write(
        ".codex/config.toml",
        f"[mcp_servers.stamp]\ncommand = {json.dumps(server['command'])}\n"
        f"args = {json.dumps(server['args'])}\n",
    )
    return repo, config


def test_codex_runs_the_projects_mcp_server_only_once_trusted(
    avatar: Avatar, model_server: FakeModelServer
) -> None:
    """codex-acp has no switch (it marks every session root trusted for codex): an empty
    stand-in covers `.codex/` in its walls."""
    require_bridges("codex-acp")
    repo, config = codex_repo(avatar.home)
    held_until_trusted(avatar, "codex", repo, config)

    repo.clear()
    config.write_text(config.read_text() + "# edited\n")
    notices = said(avatar, "-p", "codex", "chat", "hi")
    assert not repo.ran
    changed = ".codex/config.toml (changed since trusted)"
    assert notices == [STARTS_WITHOUT.format(provider="codex", files=changed)]


def test_without_the_walls_codex_does_not_start_until_trusted(
    avatar: Avatar, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    repo, _ = codex_repo(avatar.home)
    Path(avatar.env["AVATAR_CONFIG"]).write_text("scope: {sandbox: off}\n")
    refused = run(avatar.env, repo.root, "-p", "codex", "chat", "hi")
    assert not repo.ran and not model_server.requests
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.splitlines() == [
        "avatar: codex did not start: the project's agent config .codex/config.toml is not "
        "trusted and can run programs, and codex has no switch to ignore it while it runs "
        "outside the walls (scope.sandbox: off); run `avatar trust` to use it (or --trust for "
        "this run)"
    ]
    avatar("trust")
    assert said(avatar, "-p", "codex", "chat", "hi") == []
    assert repo.mcp_ran


def test_gemini_runs_the_projects_mcp_server_only_once_trusted(
    avatar: Avatar, model_server: FakeModelServer
) -> None:
    """Gemini CLI's own untrusted-folder mode holds back its workspace settings (the test home
    turns folder trust off in the user settings, so without avatar every folder is trusted)."""
    require_bridges("gemini")
    repo = Repo(avatar.home, avatar.home.gemini_dir)
    settings = repo.write(".gemini/settings.json", {"mcpServers": {"stamp": repo.server()}})
    held_until_trusted(avatar, "gemini", repo, settings)
