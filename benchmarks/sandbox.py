"""What the kernel's walls cost (issue 20), each against the same without them, in one run:

- a native `bash` tool call (`true`) in a project of this checkout's size: inside the sandbox
  (Landlock, private mount and PID namespaces, the covered-path check) and outside it, run in
  turns in one process; the difference per call (target ≤ 10 ms);
- an agent one-shot, `avatar -p claude chat hello`, with `scope.sandbox: agents` (the default)
  against `scope.sandbox: off` (target ≤ 1.05×).
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, Command, avatar_exe, interleaved, row


def _project(tmp: Path) -> Path:
    """A project like a real one: this checkout's code and tests, a git repository, a `.env`."""
    project = tmp / "project"
    for part in ("avatar", "tests", "benchmarks", "docs"):
        shutil.copytree(ROOT / part, project / part, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / ".env").write_text("TOKEN=x\n")
    return project


async def _calls(project: Path, runs: int) -> tuple[float, float]:
    from avatar.core.config import Scope
    from avatar.native.tools.base import ToolContext
    from avatar.native.tools.bash import BashTool
    from avatar.native.tools.scope import ToolScope
    from avatar.policy.sandbox import for_commands

    async def allow(*_: object) -> bool:
        return True

    scope = ToolScope(Scope(), project)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(project)}
    walled = for_commands(scope, env)
    assert walled is not None
    contexts = {
        "in": ToolContext(scope=scope, ask=allow, env=env, sandbox=walled),
        "out": ToolContext(scope=scope, ask=allow, env=env),
    }
    tool = BashTool()
    times: dict[str, list[float]] = {"in": [], "out": []}
    try:
        for _ in range(runs):
            for name, ctx in contexts.items():
                start = time.perf_counter()
                result = await tool({"command": "true"}, ctx)
                times[name].append(time.perf_counter() - start)
                assert not result.is_error, result.output
    finally:
        walled.close()
    return statistics.median(times["in"]), statistics.median(times["out"])


def run(quick: bool) -> list[dict[str, object]]:
    """The sandbox's cost on a command and on an agent start."""
    from tests.support.homes import AgentHome, avatar_env, bridges_installed
    from tests.support.model_server import FakeModelServer, Reply

    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        project = _project(Path(tmp))
        walled, bare = asyncio.run(_calls(project, 15 if quick else 60))
        rows.append(row("bash tool call `true`, no sandbox (baseline)", bare, None, "-", True))
        rows.append(
            row(
                "bash tool call `true` in the sandbox",
                walled,
                bare,
                "≤ baseline + 10 ms",
                walled - bare <= 0.010,
            )
        )
        if not bridges_installed("claude"):
            return rows
        with FakeModelServer() as server:
            server.queue("anthropic").extend([Reply.text("hello back")] * 100)
            home = AgentHome(Path(tmp) / "agent", server)
            env = avatar_env(home)
            off = Path(tmp) / "off.yaml"
            off.write_text("scope:\n  sandbox: off\n")
            cwd = home.workdir
            argv = [avatar_exe(), "-p", "claude", "chat", "hello"]
            t = interleaved(
                {
                    "in": Command(argv, env, cwd),
                    "out": Command(argv, {**env, "AVATAR_CONFIG": str(off)}, cwd),
                },
                3 if quick else 9,
            )
        rows.append(
            row("avatar -p claude chat hello, sandbox off (baseline)", t["out"], None, "-", True)
        )
        rows.append(
            row(
                "avatar -p claude chat hello, agent in the sandbox",
                t["in"],
                t["out"],
                "≤ 1.05× baseline",
                t["in"] <= 1.05 * t["out"],
            )
        )
    return rows
