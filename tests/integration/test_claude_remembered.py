"""A cold Claude one-shot starts the real claude from the launch the last one in its project
remembered, before avatar's config loads (`avatar.bridges.claude.remembered`), and runs on
that very process; and a repository's agent config that appeared since is never started from
memory: claude then starts as always, without it, and its hook never runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_agent_config_trust import claude_repo
from tests.support.drive import SESSION_LINE, Avatar
from tests.support.homes import AgentHome, avatar_env, bridge_bin, require_bridges
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

#: Logs, per process, when avatar's config module loads and each program it starts.
_ORDER = """
import os, sys
_out = open(os.environ["ORDER_LOG"] + "." + str(os.getpid()), "a")
def _hook(event, args):
    if event == "import" and args[0] == "avatar.core.config":
        _out.write("import config\\n"); _out.flush()
    elif event == "subprocess.Popen":
        _out.write("start " + " ".join(map(str, args[1])) + "\\n"); _out.flush()
sys.addaudithook(_hook)
"""


class Logged:
    """`avatar …` in one project, each run's order of events read back."""

    def __init__(self, tmp_path: Path, model_server: FakeModelServer) -> None:
        self.home = AgentHome(tmp_path / "home", model_server)
        hooks = tmp_path / "hooks"
        hooks.mkdir()
        (hooks / "sitecustomize.py").write_text(_ORDER)
        self.logs = tmp_path / "logs"
        self.logs.mkdir()
        # (the same environment each run: another is another launch)
        env = {**avatar_env(self.home), "PYTHONPATH": str(hooks), "ORDER_LOG": str(self.logs / "o")}
        self.avatar = Avatar(self.home, env)
        self.seen: set[Path] = set()

    def chat(self) -> tuple[str, list[str], list[int]]:
        """Run a plain one-shot: its session, avatar's log, and where in it claude started."""
        run = self.avatar("-p", "claude", "chat", "hello")
        assert run.stdout.endswith(f"{self.home.server.default_text}\n"), run.stdout
        found = SESSION_LINE.search(run.stderr)
        assert found, run.stderr
        claude = bridge_bin("claude")
        new = set(self.logs.iterdir()) - self.seen
        self.seen |= new
        [ours] = [
            p.read_text().splitlines()
            for p in new
            if "import config" in p.read_text()  # (avatar's own log)
        ]
        starts = [i for i, line in enumerate(ours) if line.startswith("start") and claude in line]
        return found.group(1), ours, starts


@pytest.fixture
def logged(tmp_path: Path, model_server: FakeModelServer) -> Logged:
    """One project, its runs logged; the model answers each with its default text."""
    require_bridges("claude")
    return Logged(tmp_path, model_server)


def test_a_second_cold_one_shot_starts_claude_before_the_config_loads(logged: Logged) -> None:
    _, first, [started] = logged.chat()
    assert started > first.index("import config")  # (nothing remembered yet)
    for _ in range(2):
        session, ours, starts = logged.chat()
        assert len(starts) == 1, ours  # one claude, started once, and kept:
        assert starts[0] < ours.index("import config"), ours  # before the config loaded,
        assert f"--session-id {session}" in ours[starts[0]]  # on the session that ran


def test_agent_config_that_appeared_since_is_never_started_from_memory(logged: Logged) -> None:
    logged.chat()
    repo, _, _ = claude_repo(logged.home)  # a SessionStart hook and a project MCP server
    for _ in range(2):
        _, ours, starts = logged.chat()
        assert len(starts) == 1, ours
        assert starts[0] > ours.index("import config"), ours  # computed, not remembered,
        assert "--setting-sources user --strict-mcp-config" in ours[starts[0]]  # held back:
        assert not repo.ran  # the repository's hook and server never ran
