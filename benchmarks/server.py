"""Through a running `avatar serve` (issue 24), against the plain stdlib ACP client in the same
interleaved run:

- warm `avatar -p codex chat hello`: the server keeps a started codex-acp for the next session
  of the project (`avatar.server.warm`); target ≤ 0.3× the plain client's cold one-shot;
- `avatar session list`: run in the server's warm process (the client is Python's start and a
  socket); target ≤ 60 ms.

Before each timed command the server is let finish what it does in the background (warming the
next agent): a person typing commands seconds apart gives it that time; the baseline gets the
same pause.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, Command, avatar_exe, interleaved, row

#: Seconds of CPU a process tree may use in `_QUIET` seconds and still count as at rest.
_QUIET = 0.2


def _cpu(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
    return total / 100


def _settle(server: int) -> None:
    """Wait until the server and its agents are at rest (or 20 s)."""
    from tests.support.served import descendants

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        pids = [server, *descendants(server)]
        before = _cpu(pids)
        time.sleep(_QUIET)
        if _cpu(pids) - before < 0.02:
            return


def run(quick: bool) -> list[dict[str, object]]:
    """Warm one-shot and listing through the server."""
    from avatar.providers.registry import shipped
    from tests.support.homes import AgentHome, avatar_env, bridge_bin, bridges_installed
    from tests.support.model_server import FakeModelServer, Reply
    from tests.support.served import serving

    if not bridges_installed("codex-acp"):
        return []
    runs = 3 if quick else 7
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer() as model:
        home = AgentHome(Path(tmp), model)
        env = avatar_env(home)
        env.pop("OPENAI_BASE_URL", None)
        cwd = home.workdir
        model.queue("responses").extend([Reply.text("hello back")] * 200)
        spec = shipped()["codex"]
        agent = [bridge_bin(spec.command[0]), *spec.command[1:]]
        plain = [sys.executable, "-m", "benchmarks.plain_acp", *agent, "--", "hello"]
        plain_env = {**env, **spec.env, "PYTHONPATH": str(ROOT)}
        chat = [avatar_exe(), "-p", "codex", "chat", "hello"]
        with serving(env, cwd) as server:
            subprocess.run(chat, env=env, cwd=cwd, capture_output=True, check=True)  # warms
            t = interleaved(
                {
                    "warm": Command(chat, env, cwd),
                    "base": Command(plain, plain_env, cwd),
                    "list": Command([avatar_exe(), "session", "list"], env, cwd),
                },
                runs,
                settle=lambda: _settle(server.pid),
            )

        warm, base, listing = t["warm"], t["base"], t["list"]
        rows.append(row("plain ACP client on codex (baseline)", base, None, "-", True))
        rows.append(
            row(
                "avatar -p codex chat hello, warm (server)",
                warm,
                base,
                "≤ 0.3× baseline",
                warm <= 0.3 * base,
            )
        )
        rows.append(row("avatar session list (server)", listing, None, "≤ 60 ms", listing <= 0.060))
    return rows
