"""Through a running `avatar serve`, each figure beside a floor measured in the same run (rounds
interleaved: a slow stretch of the machine hits figure and floor alike; medians):

- the warm floor of each ACP agent (codex, Gemini, claude-acp): `python -c pass` plus
  `session/new` and one prompt on the agent already running and at rest, through the plain
  stdlib ACP client (`plain_acp --warm`), back to back as the loop below;
- a loop of 10 back-to-back `avatar -p PROVIDER chat hello` one-shots (5 with `--quick`; no
  pause: the next session is prepared while the current one runs, on the same agent): median
  ≤ 1.3× its floor; for codex also with the terminal's width changing at every one-shot
  (warm agents are keyed on what changes the agent, not `COLUMNS`);
- a warm Claude one-shot (the server has claude started on a new session ahead) against a
  running claude answering one prompt (`plain_stream_json --warm`) plus `python -c pass`:
  ≤ 1.3×; and a loop of 10 back to back, reported (one claude is started ahead, once a turn
  is over: the fake model's turns are shorter than claude's boot);
- 7 back-to-back `chat --resume ID` follow-ups on a codex session (it stays loaded in the
  server after its chat: `server.keep_sessions`): each ≤ 1.3× the codex floor (the median of
  each follow-up over the rounds; the worst is shown);
- `avatar session list`: run in the server's warm process; ≤ 60 ms.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import ROOT, avatar_exe, row

#: Seconds a process tree must use almost no CPU in (`_settle`) to count as at rest.
_QUIET = 0.3
LOOP = 10
QUICK_LOOP = 5
FOLLOW_UPS = 7
TARGET = 1.3
#: Warm Claude one-shots (and floor prompts) per round.
CLAUDE_RUNS = 4
ACP = ("codex", "gemini", "claude-acp")


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
    """Wait until the server and its agents are at rest (or 20 s): a window of `_QUIET`
    seconds, longer than the server waits after a turn to start the next warm agent
    (`REFILL_AFTER`), in which they used (almost) no CPU and no process started. (Counting only
    the processes seen at its start, it ended as the server started a warm claude; the next
    one-shot then waited for claude's boot: the warm Claude row's slow samples.)"""
    from avatar.server.live import REFILL_AFTER
    from tests.support.served import descendants

    assert _QUIET > REFILL_AFTER
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        below = descendants(server)
        pids = [server, *below]
        before = _cpu(pids)
        time.sleep(_QUIET)
        if descendants(server) == below and _cpu(pids) - before < 0.02:
            return


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Wall seconds of one run of `argv` (a failure raises)."""
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=True, timeout=120)
    return time.perf_counter() - start


def _floor(argv: list[str], env: dict[str, str], cwd: Path) -> list[float]:
    """What a floor client (`--warm`) printed: the seconds of each of its turns."""
    out = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=True, timeout=300)
    took: list[float] = json.loads(out.stdout.splitlines()[-1])
    return took


class Samples:
    """Every sample of each figure, over the rounds."""

    def __init__(self) -> None:
        self.of: dict[str, list[float]] = {}

    def add(self, name: str, *values: float) -> None:
        """More samples of figure `name`."""
        self.of.setdefault(name, []).extend(values)

    def median(self, name: str) -> float:
        """The median of figure `name`'s samples."""
        return statistics.median(self.of[name])


def run(quick: bool) -> list[dict[str, object]]:
    """The warm rows and the listing through the server."""
    from avatar.providers.registry import shipped
    from tests.support.homes import AgentHome, avatar_env, bridge_bin, bridges_installed
    from tests.support.model_server import FakeModelServer, Reply
    from tests.support.served import serving

    if not bridges_installed("codex-acp"):
        return []
    rounds = 1 if quick else 3
    loop = QUICK_LOOP if quick else LOOP  # (`--quick`: within its two minutes)
    specs = shipped()
    acp = [p for p in ACP if bridges_installed(specs[p].command[0])]
    claude = bridges_installed("claude")
    s = Samples()
    follow: list[list[float]] = [[] for _ in range(FOLLOW_UPS)]
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer() as model:
        home = AgentHome(Path(tmp), model)
        env = avatar_env(home)
        env.pop("OPENAI_BASE_URL", None)
        cwd = home.workdir
        for api in ("responses", "anthropic", "gemini"):
            model.queue(api).extend([Reply.text("hello back")] * 2000)
        bare = {**env, "PYTHONPATH": str(ROOT)}
        nothing = [sys.executable, "-c", "pass"]

        def floor_of(provider: str) -> list[str]:
            spec = specs[provider]
            agent = [bridge_bin(spec.command[0]), *spec.command[1:]]
            client = [sys.executable, "-m", "benchmarks.plain_acp", "--warm", str(loop)]
            return [*client, *agent, "--", "hello"]

        def chat(provider: str, *args: str) -> list[str]:
            return [avatar_exe(), "-p", provider, "chat", *args]

        with serving(env, cwd) as server:

            def settle() -> None:
                _settle(server.pid)

            for provider in [*acp, *(["claude"] if claude else [])]:  # each agent warm
                for _ in range(2):
                    _timed(chat(provider, "hello"), env, cwd)
            for _ in range(rounds):
                for _ in range(5):
                    s.add("pass", _timed(nothing, env, cwd))
                for provider in acp:
                    spec_env = {**bare, **specs[provider].env}
                    s.add(f"floor {provider}", *_floor(floor_of(provider), spec_env, cwd))
                    settle()
                    s.add(
                        provider, *[_timed(chat(provider, "hello"), env, cwd) for _ in range(loop)]
                    )
                if "codex" in acp:
                    settle()
                    for n in range(loop):
                        wide = {**env, "COLUMNS": str(80 + 40 * (n % 2))}
                        s.add("codex widths", _timed(chat("codex", "hello"), wide, cwd))
                    _follow_ups(follow, env, cwd, chat, settle)
                if claude:
                    stream = [sys.executable, "-m", "benchmarks.plain_stream_json", "--warm"]
                    s.add(
                        "floor claude",
                        *_floor(
                            [*stream, str(CLAUDE_RUNS), bridge_bin("claude"), "hello"], bare, cwd
                        ),
                    )
                    for _ in range(CLAUDE_RUNS):
                        settle()
                        s.add("claude", _timed(chat("claude", "hello"), env, cwd))
                    settle()
                    s.add(
                        "claude back to back",
                        *[_timed(chat("claude", "hello"), env, cwd) for _ in range(loop)],
                    )
                settle()
                for _ in range(3):
                    s.add("list", _timed([avatar_exe(), "session", "list"], env, cwd))
    return rows_of(s, acp, claude, follow, loop=loop)


def _follow_ups(
    follow: list[list[float]],
    env: dict[str, str],
    cwd: Path,
    chat: Callable[..., list[str]],
    settle: Callable[[], None],
) -> None:
    """A new codex session, then its follow-ups back to back, each timed into `follow`."""
    from tests.support.drive import SESSION_LINE

    first = subprocess.run(
        chat("codex", "hello"), env=env, cwd=cwd, capture_output=True, text=True, check=True
    )
    found = SESSION_LINE.search(first.stderr)
    assert found, first.stderr
    settle()
    for times in follow:
        times.append(_timed(chat("codex", "--resume", found.group(1), "hello"), env, cwd))


def rows_of(
    s: Samples, acp: list[str], claude: bool, follow: list[list[float]], *, loop: int = LOOP
) -> list[dict[str, object]]:
    """The rows of the samples `s` (their medians) and of each follow-up's times; `loop`:
    one-shots in each back-to-back loop."""
    rows: list[dict[str, object]] = []
    start = s.median("pass")
    rows.append(row("python -c pass", start, None, "-", True))
    for provider in acp:
        floor = start + s.median(f"floor {provider}")
        rows.append(row(f"warm floor: session/new + prompt on {provider}", floor, None, "-", True))
        figure = s.median(provider)
        name = f"{loop} back-to-back avatar -p {provider} chat (server)"
        rows.append(row(name, figure, floor, f"≤ {TARGET}× floor", figure <= TARGET * floor))
        if provider == "codex":
            wide = s.median("codex widths")
            name = f"{loop} back to back, terminal widths alternating"
            rows.append(row(name, wide, floor, f"≤ {TARGET}× floor", wide <= TARGET * floor))
            if follow[0]:
                each = [statistics.median(t) for t in follow]
                worst = max(each)
                name = f"{FOLLOW_UPS} back-to-back chat --resume ID follow-ups, worst"
                rows.append(
                    row(name, worst, floor, f"≤ {TARGET}× floor each", worst <= TARGET * floor)
                )
    if claude:
        floor = start + s.median("floor claude")
        rows.append(row("warm floor: a prompt on a running claude", floor, None, "-", True))
        figure = s.median("claude")
        name = "warm avatar -p claude chat (server)"
        rows.append(row(name, figure, floor, f"≤ {TARGET}× floor", figure <= TARGET * floor))
        # One claude is started ahead for the next session, once a turn is over: turns shorter
        # than claude's boot (~0.4 s) outrun it (docs/startup.md).
        name = f"{loop} back-to-back avatar -p claude chat (server)"
        rows.append(row(name, s.median("claude back to back"), floor, "(reported)", True))
    listing = s.median("list")
    rows.append(row("avatar session list (server)", listing, None, "≤ 60 ms", listing <= 0.060))
    return rows
