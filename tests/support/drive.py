"""Driving avatar in tests: the installed command in a subprocess, and a few turns through
the engine (a session to hand over, import or lose)."""

from __future__ import annotations

import asyncio
import re
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

from tests.support.homes import AgentHome, avatar_env

#: The line avatar prints on stderr when a session opens: id, provider, how.
SESSION_LINE = re.compile(r"^session: (\S+) \((\S+), (\w+)\)$", re.M)


def avatar(
    env: dict[str, str],
    cwd: Path,
    *args: str,
    timeout: float = 60,
    preexec: Callable[[], None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the installed `avatar` with `args` and wait for it (`preexec` runs in the child)."""
    return subprocess.run(
        ["avatar", *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=preexec,
    )


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
    return subprocess.run(
        ["avatar", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=avatar_env(home),
        cwd=home.workdir,
        timeout=120,
    )


def talk(home: AgentHome, provider: str, prompts: Iterable[str]) -> str:
    """A new session on `provider` with one turn per prompt; its id."""
    from avatar.engine import Engine

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


def backdate_gemini(home: AgentHome, provider: str, session_id: str) -> None:
    """Name a Gemini session's files after an earlier minute, as if it were started before
    this one: reopening it then needs no wait for Gemini's same-minute load bug (that wait
    is tested in tests/acp/test_quirks.py)."""
    from avatar.bridges import acp_quirks

    if provider != "gemini":
        return
    for path in acp_quirks.gemini_session_files(home.env, session_id):
        minute = acp_quirks.created_minute(path)
        assert minute is not None
        path.rename(path.with_name(path.name.replace(minute, "2001-01-01T00-00")))
