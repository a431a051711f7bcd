"""What the kernel's walls cost (issue 20), each against the same without them, in one run:

- a native `bash` tool call (`true`) in a project of this checkout's size: inside the sandbox
  (the exec stub: Landlock, private mount and PID namespaces, covered sockets, the seccomp
  filter, the covered-path check), the same with `scope.network: off` (a network namespace
  too), and outside it, run in turns in one process; the difference per call (target ≤ 10 ms);
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


async def _calls(project: Path, runs: int) -> dict[str, float]:
    from avatar.core.config import Scope
    from avatar.native.tools.base import ToolContext
    from avatar.native.tools.bash import BashTool
    from avatar.native.tools.scope import ToolScope
    from avatar.policy.sandbox import for_commands

    async def allow(*_: object) -> bool:
        return True

    scope = ToolScope(Scope(), project)
    offline = ToolScope(Scope(network="off"), project)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(project)}
    walled, no_net = for_commands(scope, env), for_commands(offline, env)
    assert walled is not None and no_net is not None
    contexts = {
        "in": ToolContext(scope=scope, ask=allow, env=env, sandbox=walled),
        "off": ToolContext(scope=offline, ask=allow, env=env, sandbox=no_net),
        "out": ToolContext(scope=scope, ask=allow, env=env),
    }
    tool = BashTool()
    times: dict[str, list[float]] = {name: [] for name in contexts}
    try:
        for _ in range(runs):
            for name, ctx in contexts.items():
                start = time.perf_counter()
                result = await tool({"command": "true"}, ctx)
                times[name].append(time.perf_counter() - start)
                assert not result.is_error, result.output
    finally:
        walled.close()
        no_net.close()
    return {name: statistics.median(t) for name, t in times.items()}


def run(quick: bool) -> list[dict[str, object]]:
    """The sandbox's cost on a command and on an agent start."""
    from tests.support.homes import AgentHome, avatar_env, bridges_installed
    from tests.support.model_server import FakeModelServer, Reply

    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        project = _project(Path(tmp))
        calls = asyncio.run(_calls(project, 15 if quick else 60))
        bare = calls["out"]
        rows.append(row("bash tool call `true`, no sandbox (baseline)", bare, None, "-", True))
        for name, label in (("in", ""), ("off", ", scope.network: off")):
            rows.append(
                row(
                    f"bash tool call `true` in the sandbox{label}",
                    calls[name],
                    bare,
                    "≤ baseline + 10 ms",
                    calls[name] - bare <= 0.010,
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
