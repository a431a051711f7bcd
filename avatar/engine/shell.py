"""A shell command the user runs from the REPL (`!command`): `bash -c` in the project, inside
the same walls as the native agent's `bash` tool and every agent's terminals (the commands'
sandbox, `avatar.policy.sandbox.for_commands`, with the session's scope), with the commands'
environment (no key avatar holds), no input, its output streamed as it comes. Ctrl-C stops
it and everything it started (its own process group).

The user's own command is not held to the scope's allow-list of commands (that is for
agents); the walls hold it all the same. Its output can go with the next prompt, as one of
avatar's notes (`context`): the agent reads it, a recap or a handoff leaves it out.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.native.tools.truncate import truncate_tail
from avatar.policy import sandbox
from avatar.policy.commands import command_ended, start_command
from avatar.policy.scope import ScopePolicy
from avatar.sessions.handoff_marker import note

if TYPE_CHECKING:
    from avatar.core.config import Scope

_KEEP = 256 * 1024  # the output's tail kept for the context (50 KB of it is sent)


@dataclass(frozen=True)
class ShellResult:
    """A `!command` that ended: the command, its output (the tail kept), how it ended."""

    command: str
    output: str
    exit_code: int | None  # None: stopped (Ctrl-C)
    walled: bool  # ran inside the walls (False: `sandbox: off`, or no walls here)

    @property
    def context(self) -> str:
        """The note that puts this output into the next prompt (its last 2,000 lines or
        50 KB)."""
        cut = truncate_tail(self.output)
        body = cut.text or "(no output)"
        if cut.truncated:
            body = f"[the last {cut.shown_lines} of {cut.total_lines} lines]\n{body}"
        ended = "stopped" if self.exit_code is None else str(self.exit_code)
        said = "the user ran this command in the project and added its output"
        return note("shell_output", f"({said})\n{body}", command=self.command, exit=ended)


async def run_shell(
    command: str,
    *,
    scope: Scope,
    cwd: Path,
    add_dirs: Sequence[Path],
    env: Mapping[str, str],
    show: Callable[[str], None],
) -> ShellResult:
    """Run `command` as the module docstring says, passing its output to `show` as it comes
    (text, whole lines where it can); its result once it ended."""
    policy = ScopePolicy(scope, cwd, add_dirs)
    walls = sandbox.for_commands(policy, env)
    run_env = walls.env(env) if walls is not None else sandbox.command_env(env)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    kept: list[str] = []
    size = 0
    try:
        proc = await start_command(["bash", "-c", command], cwd=cwd, env=run_env, sandbox=walls)
        assert proc.stdout is not None
        try:
            while chunk := await proc.stdout.read(65536):
                text = decoder.decode(chunk)
                if text:
                    show(text)
                    kept.append(text)
                    size += len(text)
                    while size > _KEEP and len(kept) > 1:
                        size -= len(kept.pop(0))
            show(decoder.decode(b"", final=True))
            code: int | None = await proc.wait()
        except asyncio.CancelledError:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            raise
        finally:
            command_ended(proc)
    finally:
        if walls is not None:
            walls.close()
    return ShellResult(command, "".join(kept), code, walls is not None and sandbox.support().walls)
