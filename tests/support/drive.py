"""Driving avatar in tests: the installed command in a subprocess, and a few turns through
the engine (a session to hand over, import or lose)."""

from __future__ import annotations

import ast
import asyncio
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from tests.support.homes import AgentHome, avatar_env

#: The line avatar prints on stderr when a session opens: id, provider, how.
SESSION_LINE = re.compile(r"^session: (\S+) \((\S+), (\w+)\)$", re.M)


def avatar(
    env: dict[str, str],
    cwd: Path,
    *args: str,
    timeout: float = 60,
    stdin: str | None = None,
    preexec: Callable[[], None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the installed `avatar` with `args` and wait for it: `stdin` is its input (none when
    None), `preexec` runs in the child."""
    return subprocess.run(
        ["avatar", *args],
        env=env,
        cwd=cwd,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=preexec,
    )


class Avatar:
    """`avatar …` run again and again in one agent home's project, with one environment: each
    call asserts its exit code, and the session line and notices are read off stderr."""

    def __init__(self, home: AgentHome, env: dict[str, str], timeout: float = 150) -> None:
        self.home, self.env, self.timeout = home, env, timeout

    def __call__(self, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        proc = avatar(self.env, self.home.workdir, *args, timeout=self.timeout)
        assert proc.returncode == code, f"avatar {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
        return proc

    @staticmethod
    def session(proc: subprocess.CompletedProcess[str]) -> tuple[str, str, str]:
        """(id, provider, how) from the one `session:` line on stderr."""
        found = SESSION_LINE.findall(proc.stderr)
        assert len(found) == 1, proc.stderr
        sid, provider, how = found[0]
        return sid, provider, how

    @staticmethod
    def notices(proc: subprocess.CompletedProcess[str]) -> list[str]:
        """The `notice:` lines on stderr."""
        return [line for line in proc.stderr.splitlines() if line.startswith("notice: ")]


@dataclass
class InProcess:
    """`avatar ARGS` run by `main()` in a Python of its own: what it printed, its exit code,
    and which of the modules asked about it had loaded when it ended."""

    stdout: str
    stderr: str
    code: object
    loaded: list[str]


def in_process(
    env: dict[str, str], cwd: Path, *args: str, watch: Iterable[str], timeout: float = 120
) -> InProcess:
    """Run `avatar ARGS` through `avatar.cli.main` in a new interpreter, and say which of the
    modules in `watch` it loaded (what a command costs at start-up, as a user's run pays)."""
    code = (
        "import sys\n"
        "from avatar.cli import main\n"
        "code = None\n"
        f"try:\n    main({list(args)!r})\n"
        "except SystemExit as e:\n    code = e.code\n"
        f"loaded = sorted(m for m in {sorted(watch)!r} if m in sys.modules)\n"
        f"sys.stdout.write({_ENDED!r} + repr((code, loaded)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd,
        timeout=timeout,
    )  # fmt: skip
    printed, ended, tail = done.stdout.rpartition(_ENDED)
    assert ended, f"avatar did not end: {done.stdout!r} {done.stderr!r}"
    status, loaded = ast.literal_eval(tail)
    return InProcess(printed, done.stderr, status, loaded)


#: What `in_process` prints after the command's own output.
_ENDED = "\n\x00ended\x00"


def start(env: dict[str, str], cwd: Path, *args: str) -> subprocess.Popen[str]:
    """Start the installed `avatar` with `args` in the background (stdout/stderr piped)."""
    return subprocess.Popen(
        ["avatar", *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_avatar(home: AgentHome, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`avatar ARGS` in the home's project directory, with its environment."""
    return avatar(avatar_env(home), home.workdir, *args, stdin=stdin, timeout=120)


def talk(home: AgentHome, provider: str, prompts: Iterable[str]) -> str:
    """A new session on `provider` with one turn per prompt; its id."""
    from avatar.engine.engine import Engine

    env = avatar_env(home)

    async def go() -> str:
        engine = Engine.from_config(
            home.workdir, provider=provider, env=env, home=Path(env["AVATAR_HOME"])
        )
        try:
            sid = (await engine.open()).session_id
            for text in prompts:
                [e async for e in engine.send(text)]
            return sid
        finally:
            await engine.close()

    return asyncio.run(go())


def rename_gemini_files(home: AgentHome, session_id: str, minute: str) -> None:
    """Name a Gemini session's files as if their recording had started in `minute`
    (`YYYY-MM-DDTHH-MM`). Gemini finds a session by its files' content; the minute in their
    names is all its same-minute load bug depends on, so a test can force the bug (the
    current minute) or stand for "started before this minute" without waiting for the clock
    (that wait is tested in tests/acp/test_quirks.py)."""
    from avatar.bridges.acp import quirks as acp_quirks

    for path in acp_quirks.gemini_session_files(home.env, session_id):
        old = acp_quirks.created_minute(path)
        assert old is not None
        path.rename(path.with_name(path.name.replace(old, minute)))


def backdate_gemini(home: AgentHome, provider: str, session_id: str) -> None:
    """For Gemini, name the session's files after an earlier minute, so reopening it needs
    no wait for Gemini's same-minute load bug; other providers are left alone."""
    if provider == "gemini":
        rename_gemini_files(home, session_id, "2001-01-01T00-00")
