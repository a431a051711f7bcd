"""A cold one-shot starts its agent before the rest of avatar loads (`Engine.launch_ahead`):
its process starts before asyncio is imported (the order, from an audit hook); the session
runs on that very process (one start of the agent, which then gets initialize, session/new
and the prompt), inside avatar's walls like any agent (it cannot create a file outside the
project); and an agent started ahead that no session takes (here a `session: continue_last`
block makes the open a continue, which the full bridge runs) is stopped, nothing of it left
once avatar exits. The real codex-acp, behind a tap that logs what it is sent
(tests/support/acp_tap.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.drive import Avatar
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.served import processes_with

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def _tapped(home: AgentHome, **codex: object) -> Path:
    sent = home.workdir / "sent.jsonl"  # (in the project: the walls let the agent write it)
    tap = Path(__file__).parents[1] / "support" / "acp_tap.py"
    env = {"TAP_TRY_WRITE": str(home.root / "outside.txt")}
    entry = {"command": [sys.executable, str(tap), str(sent), "codex-acp"], "env": env, **codex}
    (home.root / "avatar-config.yaml").write_text(json.dumps({"providers": {"codex": entry}}))
    return sent


def _starts(sent: Path) -> list[list[str]]:
    """What each start of the agent was sent: its methods, start by start."""
    starts: list[list[str]] = []
    for line in sent.read_text().splitlines():
        message = json.loads(line)
        if message.get("tap") == "started":
            assert message["wrote"] is False  # inside the walls
            starts.append([str(message["pid"])])
        elif "method" in message:
            starts[-1].append(message["method"])
    return starts


def test_a_one_shot_runs_on_the_agent_it_started_ahead(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    home = AgentHome(tmp_path, model_server)
    sent = _tapped(home)
    model_server.script("responses", Reply.text("hello back"))
    proc = Avatar(home, avatar_env(home))("-p", "codex", "chat", "hello")
    assert proc.stdout == "hello back\n"
    [start] = _starts(sent)
    assert start[1:4] == ["initialize", "session/new", "session/prompt"]
    # (the tap's pid is its own PID namespace's: look for its command line instead)
    assert not processes_with(str(sent))
    assert not (home.root / "outside.txt").exists()


def test_an_agent_started_ahead_that_no_session_takes_is_stopped(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    home = AgentHome(tmp_path, model_server)
    sent = _tapped(home, session={"continue_last": True})
    model_server.script("responses", Reply.text("hello back"))
    proc = Avatar(home, avatar_env(home))("-p", "codex", "chat", "hello")
    assert "hello back" in proc.stdout
    starts = _starts(sent)
    ran = [s for s in starts if "session/prompt" in s]
    assert len(ran) == 1 and len(starts) <= 2
    for start in starts:  # (the one started ahead, if any, was sent nothing and is gone)
        assert start[1:] == [] or start in ran
    assert not processes_with(str(sent))


#: Put first on PYTHONPATH: logs, per process, the order in which modules load and processes
#: start (an audit hook), to `$ORDER_LOG.<pid>`.
_ORDER = """
import os, sys
_out = open(os.environ["ORDER_LOG"] + "." + str(os.getpid()), "a")
def _hook(event, args):
    if event == "import" and args[0] in ("asyncio", "click", "avatar.library.catalog"):
        _out.write("import " + args[0] + "\\n"); _out.flush()
    elif event == "subprocess.Popen":
        _out.write("start " + " ".join(map(str, args[1])) + "\\n"); _out.flush()
sys.addaudithook(_hook)
"""


def test_the_agent_starts_before_the_event_loop_loads(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """The point of starting ahead: in `avatar chat`, the agent's process starts before asyncio
    (and all that loads after it) is imported, so the two overlap."""
    require_bridges("codex-acp")
    home = AgentHome(tmp_path / "home", model_server)
    _tapped(home)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_ORDER)
    env = {**avatar_env(home), "PYTHONPATH": str(hooks), "ORDER_LOG": str(tmp_path / "order")}
    model_server.script("responses", Reply.text("hello back"))
    assert Avatar(home, env)("-p", "codex", "chat", "hello").stdout == "hello back\n"
    [ours] = [
        p.read_text().splitlines()
        for p in tmp_path.glob("order.*")
        if "acp_tap.py" in p.read_text()  # (avatar's own log: the process that started the tap)
    ]
    started = next(i for i, line in enumerate(ours) if "acp_tap.py" in line)
    assert started < ours.index("import asyncio"), ours
    # A plain `chat PROMPT` runs without click and the command tree (`avatar.cli.early`).
    assert "import click" not in ours, ours
    # (and before the session stores and records, which only the open needs)
    assert started < ours.index("import avatar.library.catalog"), ours
