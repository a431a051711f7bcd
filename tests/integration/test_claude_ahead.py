"""Claude started before anyone asks for it (`avatar.bridges.claude.launch`): a cold `avatar -p
claude chat` starts claude on a new session of its own before the event loop loads, and the
session runs on that very process; through the server, a claude one-shot runs on a claude the
warm engine started before it was asked for. Claude writes nothing of a session before its
first turn: the one started for a chat that never came leaves no session behind."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.integration.test_launch_ahead import _ORDER
from tests.support.drive import SESSION_LINE, Avatar, avatar
from tests.support.homes import AgentHome, avatar_env, bridge_bin, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.served import processes_with, serving

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def _started_at(pid: int) -> float:
    """When process `pid` started (seconds since the epoch, from /proc)."""
    ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    boot = next(
        float(line.split()[1])
        for line in Path("/proc/stat").read_text().splitlines()
        if line.startswith("btime")
    )
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def _transcripts(home: AgentHome) -> set[str]:
    """The ids of the sessions claude has written in this home."""
    return {p.stem for p in (home.claude_dir / "projects").rglob("*.jsonl")}


def test_a_cold_claude_one_shot_starts_claude_first_and_runs_on_it(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    require_bridges("claude")
    home = AgentHome(tmp_path / "home", model_server)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_ORDER)
    env = {**avatar_env(home), "PYTHONPATH": str(hooks), "ORDER_LOG": str(tmp_path / "order")}
    model_server.script("anthropic", Reply.text("hello back"))
    run = Avatar(home, env)("-p", "claude", "chat", "hello")
    assert run.stdout == "hello back\n"
    found = SESSION_LINE.search(run.stderr)
    assert found
    [ours] = [
        p.read_text().splitlines()
        for p in tmp_path.glob("order.*")
        if bridge_bin("claude") in p.read_text()  # (avatar's own log: it started claude)
    ]
    claude = bridge_bin("claude")  # (not "claude": rewind's git commands name the test's path)
    claudes = [i for i, line in enumerate(ours) if line.startswith("start") and claude in line]
    assert len(claudes) == 1  # one claude, started once,
    assert claudes[0] < ours.index("import asyncio"), ours  # before the event loop loaded,
    assert f"--session-id {found.group(1)}" in ours[claudes[0]]  # on the session that ran
    assert _transcripts(home) == {found.group(1)}


def test_a_served_claude_one_shot_runs_on_a_claude_started_before_it(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    require_bridges("claude")
    home = AgentHome(tmp_path, model_server)
    env = avatar_env(home)
    model_server.queue("anthropic").extend(Reply.text(f"answer {n}") for n in (1, 2))
    said = []
    with serving(env, home.workdir):
        for n in (1, 2):
            time.sleep(4)  # a person between two commands: the server starts the next claude
            asked = time.time()
            run = avatar(env, home.workdir, "-p", "claude", "chat", "hi", timeout=120)
            assert run.returncode == 0 and run.stdout == f"answer {n}\n", run.stderr
            found = SESSION_LINE.search(run.stderr)
            assert found
            said.append(found.group(1))
        # The second chat's claude (still running: its session is kept loaded) was started
        # before that chat was asked for.
        [second] = processes_with(said[1])
        assert _started_at(second) < asked - 1
    # The claude started for a third chat that never came wrote nothing.
    assert _transcripts(home) == set(said)
