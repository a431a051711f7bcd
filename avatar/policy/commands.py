"""The commands avatar runs for an agent (its terminals, the native agent's bash): started in
their own process group inside the walls (`avatar.policy.sandbox`), watched by the guard so
that they die with avatar, and let go of when they ended."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.policy.kernel.guard import guard
from avatar.policy.sandbox import entered

if TYPE_CHECKING:
    from avatar.policy.sandbox import Sandbox


async def start_command(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], sandbox: Sandbox | None
) -> asyncio.subprocess.Process:
    """Start a command for an agent: its own process group (a timeout or an abort ends all it
    started), stdout and stderr in one pipe, no stdin, inside `sandbox` when given and watched
    so that it dies with avatar. Call `command_ended` when it has exited."""
    env = sandbox.env(env) if sandbox else dict(env)
    with entered(sandbox, argv, env, cwd) as entry:
        process = await asyncio.create_subprocess_exec(
            *entry.argv,
            cwd=str(cwd),
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            pass_fds=entry.pass_fds,
        )
    guard().watch(process.pid)
    return process


def command_ended(process: asyncio.subprocess.Process) -> None:
    """`process` (started by `start_command`) has exited: stop watching its group once empty."""
    guard().release(process.pid)
