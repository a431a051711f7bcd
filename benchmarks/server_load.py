"""A server left running under load (issue 32), a real `avatar serve`:

- `ps` while another client searches: the first `avatar session search` over 10,000 sessions
  per provider × 4 (40,000; 1,000 × 4 with --quick) builds the search index, seconds of work;
  meanwhile `ps` is asked again and again on the socket. Target: it answers within 50 ms
  (median), beside the same question asked of the idle server in the same run (the
  baseline); `avatar ps` end to end is reported the same way (it went from 0.02 s to 2.85 s
  when reads ran on the server's event loop);
- flat memory: after a warm-up, 1,000 served commands of each kind (200 with --quick) —
  `session list`, `ps`, one-shot native chats, attach/detach to a hosted session — sent as
  their clients send them (`tests.support.served_load`); the server's resident set after the
  warm-up is the baseline, the growth over all of them the figure. Target: < 5 MB (it grew
  ~50 KB per `session list` and ~95 KB per one-shot without end).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.common import Command, avatar_exe, interleaved, row

#: Seconds within which `ps` must answer while another client searches.
PS_TARGET = 0.050
#: RSS growth allowed over every kind's commands, in bytes.
FLAT = 5 << 20
_MB = 1 << 20


def _ps_times(env: dict[str, str], count: int) -> list[float]:
    from tests.support import served_load

    times = []
    for _ in range(count):
        start = time.perf_counter()
        served_load.ps(env)
        times.append(time.perf_counter() - start)
    return times


def ps_while_searching(quick: bool) -> list[dict[str, object]]:
    """`ps` answered by a server one of whose clients builds the search index."""
    from benchmarks.sessions import cli_env
    from tests.sessions.synth import populate
    from tests.support.served import serving

    n = 1000 if quick else 10_000
    root = Path(tempfile.mkdtemp(prefix="avatar-bench-server-load-"))
    try:
        cwd = root / "proj"
        cwd.mkdir()
        synth = populate(root, n, cwd=str(cwd))
        env = cli_env(root, synth.env, root / "agents-started")
        from benchmarks.search import _native

        _native(Path(env["AVATAR_HOME"]), cwd, n)
        runtime = root / "run"
        runtime.mkdir(mode=0o700)
        env["XDG_RUNTIME_DIR"] = str(runtime)
        ps_cli = Command([avatar_exe(), "ps"], env, cwd)
        with serving(env, cwd):
            idle = statistics.median(_ps_times(env, 21))
            idle_cli = interleaved({"ps": ps_cli}, 5)["ps"]
            search = subprocess.Popen(
                [avatar_exe(), "session", "search", "hello"],
                env=env,
                cwd=cwd,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            busy: list[float] = []
            busy_cli: list[float] = []
            try:
                time.sleep(0.5)  # (the search has started its index build)
                while search.poll() is None:
                    busy += _ps_times(env, 1)
                    start = time.perf_counter()
                    subprocess.run(ps_cli.argv, env=env, cwd=cwd, capture_output=True, check=True)
                    busy_cli.append(time.perf_counter() - start)
                    time.sleep(0.05)
            finally:
                if search.wait(600):
                    raise RuntimeError(f"the search failed ({search.returncode})")
        if not busy:
            raise RuntimeError("the search ended before ps was asked")
        during, during_cli = statistics.median(busy), statistics.median(busy_cli)
        label = f"{4 * n:,} sessions"
        return [
            row("ps on the socket, server idle (baseline)", idle, None, "-", True),
            row(
                f"ps on the socket while a client searches {label} ({len(busy)} asked)",
                during,
                idle,
                f"≤ {PS_TARGET * 1000:.0f} ms",
                during <= PS_TARGET,
            ),
            row("avatar ps, server idle (baseline)", idle_cli, None, "-", True),
            row(
                f"avatar ps while a client searches {label}",
                during_cli,
                idle_cli,
                "(reported)",
                True,
            ),
        ]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def flat_memory(quick: bool) -> list[dict[str, object]]:
    """The server's RSS growth over `count` served commands of each kind, after a warm-up."""
    from tests.support import served_load
    from tests.support.homes import AgentHome, avatar_env
    from tests.support.model_server import FakeModelServer
    from tests.support.served import serving

    # (the allocator settles over the first ~1,000 one-shots: fewer leave its growth in the
    # figure; tests/server/test_memory.py. `--quick` is a glance within its two minutes.)
    count, warm_up = (200, 300) if quick else (1000, 1000)
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer() as model:
        home = AgentHome(Path(tmp), model)
        env = avatar_env(home)
        env["PATH"] = f"{Path(avatar_exe()).parent}{os.pathsep}{env.get('PATH', '')}"
        cwd = home.workdir
        with serving(env, cwd) as server:
            host = served_load.Host(env, "5e55104a-a77a-4c4e-9e55-ca11ed000002", cwd)
            try:
                kinds = {
                    "session list": lambda: served_load.run(env, cwd, "session", "list"),
                    "ps": lambda: served_load.ps(env),
                    "one-shot (native)": lambda: served_load.run(
                        env, cwd, "-p", "native", "chat", "hello"
                    ),
                    "attach/detach": lambda: served_load.attach_detach(env, host.session_id),
                }
                for command in kinds.values():
                    for _ in range(warm_up):
                        command()
                before = served_load.rss(server.pid)
                grown = {}
                for name, command in kinds.items():
                    start = served_load.rss(server.pid)
                    for _ in range(count):
                        command()
                    grown[name] = served_load.rss(server.pid) - start
                after = served_load.rss(server.pid)
            finally:
                host.close()
    rows = [row("server RSS after the warm-up (baseline)", before / _MB, None, "-", True, "MB")]
    for name, growth in grown.items():
        name = f"server RSS growth, {count:,} × {name}"
        rows.append(row(name, growth / _MB, None, "(reported)", True, "MB"))
    total = after - before
    rows.append(
        row(
            f"server RSS growth, {count:,} of each kind",
            total / _MB,
            before / _MB,
            f"< {FLAT // _MB} MB",
            total < FLAT,
            "MB",
        )
    )
    return rows


def run(quick: bool) -> list[dict[str, object]]:
    """Both: ps under a search, and memory under use."""
    return [*ps_while_searching(quick), *flat_memory(quick)]
