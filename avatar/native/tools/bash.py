"""`bash`: run a shell command in the project, with a timeout that kills its process group.

The command runs in its own session (process group), so a timeout or an abort kills
everything it started — pipelines, subshells, background jobs — not just the shell.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

from pydantic import Field

from avatar.native.tools.base import AgentToolResult, Tool, ToolArgs, ToolContext
from avatar.native.tools.errors import ToolError
from avatar.native.tools.truncate import MAX_BYTES, truncate_tail
from avatar.policy.commands import command_ended, start_command

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 1800.0
_KEEP_BYTES = 4 * MAX_BYTES  # the tail kept in memory; only the last 50 KB is shown anyway
_DRAIN_AFTER_EXIT = 0.3  # background jobs may hold the pipe open; don't wait for them


class BashArgs(ToolArgs):
    """Arguments of `bash`."""

    command: str = Field(description="The command line, run with bash -c in the project root.")
    timeout: float | None = Field(
        None, gt=0, description=f"Seconds before it is killed (default {DEFAULT_TIMEOUT:g})."
    )


class BashTool(Tool, name="bash", kind="execute", args=BashArgs):
    """Run a shell command."""

    description = (
        "Run a shell command with bash in the project root; stdout and stderr are combined. "
        f"Killed (with everything it started) after `timeout` seconds (default "
        f"{DEFAULT_TIMEOUT:g}). Long output keeps its last 2000 lines / 50 KB."
    )

    def title(self, args: dict[str, object]) -> str:
        """The command's first line."""
        command = str(args.get("command", ""))
        first = command.splitlines()[0] if command else ""
        return first if len(first) <= 200 else first[:199] + "…"

    async def run(self, args: BashArgs, ctx: ToolContext) -> AgentToolResult:
        """Check the command against the scope, ask, run, and report its output and status."""
        if "\0" in args.command:  # no program can take it as an argument: exec would refuse
            raise ToolError(
                "the command contains a NUL byte, which a command line cannot hold; "
                "to produce one, write it as printf '\\0'"
            )
        ctx.scope.check_command(args.command)
        await self.require_permission(ctx, self.title({"command": args.command}))
        timeout = min(args.timeout or DEFAULT_TIMEOUT, MAX_TIMEOUT)
        env = dict(ctx.env) if ctx.env else dict(os.environ)
        proc = await start_command(
            ["bash", "-c", args.command], cwd=ctx.root, env=env, sandbox=ctx.sandbox
        )
        sink = _Tail()
        assert proc.stdout is not None
        reader = asyncio.create_task(sink.pump(proc.stdout))
        waiter = asyncio.create_task(_exit_code(proc))
        timed_out = False
        try:
            done, _ = await asyncio.wait({waiter}, timeout=timeout)
            if not done:
                timed_out = True
                await _terminate(proc.pid, waiter)
            await asyncio.wait({reader}, timeout=_DRAIN_AFTER_EXIT)
        except asyncio.CancelledError:
            # Abort: no grace period, the user wants it stopped now.
            _killpg(proc.pid, signal.SIGKILL)
            raise
        finally:
            reader.cancel()
            if not waiter.done():
                waiter.cancel()
            command_ended(proc)
            # Release the pipe a background job may still hold (no public API for this).
            transport = getattr(proc, "_transport", None)
            if transport is not None and proc.returncode is not None:
                transport.close()
        code = proc.returncode
        text = sink.text()
        cut = truncate_tail(text)
        body = cut.text if text else "(no output)"
        notes = []
        if cut.truncated:
            notes.append(
                f"[output truncated: showing the last {cut.shown_lines} of {sink.lines} lines; "
                "pipe the command through head, tail or grep (or redirect to a file and read "
                "it with offset) to see the rest]"
            )
        if timed_out:
            notes.append(f"[timed out after {timeout:g} s; it and its children were killed]")
        elif code:
            notes.append(f"[exit code {code}]")
        if notes:
            body += "\n\n" + "\n".join(notes)
        return AgentToolResult(body, is_error=timed_out or bool(code))


class _Tail:
    """Collects a stream's last bytes and counts its lines."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.dropped = False
        self.lines = 0
        self._last = b""

    async def pump(self, stream: asyncio.StreamReader) -> None:
        while True:
            chunk = await stream.read(65536)
            if not chunk:
                break
            self.lines += chunk.count(b"\n")
            self._last = chunk[-1:]
            self.buf += chunk
            if len(self.buf) > _KEEP_BYTES:
                del self.buf[: len(self.buf) - _KEEP_BYTES]
                self.dropped = True

    def text(self) -> str:
        data = bytes(self.buf)
        if self.dropped:
            # The kept tail starts mid-line; drop the fragment.
            nl = data.find(b"\n")
            data = data[nl + 1 :] if nl >= 0 else data
        if self._last and self._last != b"\n":
            self.lines += 1
            self._last = b"\n"
        return data.decode("utf-8", errors="replace").rstrip("\n")


async def _exit_code(proc: asyncio.subprocess.Process) -> int:
    """Wait for the shell to exit.

    Not `proc.wait()`: on Python 3.11 that also waits until every pipe is closed, i.e. for
    any background job that inherited stdout — `sleep 60 &` would hold the tool for a minute.
    """
    while proc.returncode is None:
        await asyncio.sleep(0.02)
    return proc.returncode


def _killpg(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def _terminate(pid: int, waiter: asyncio.Task[int]) -> None:
    """SIGTERM the group, then SIGKILL it if it is still there after a second."""
    _killpg(pid, signal.SIGTERM)
    done, _ = await asyncio.wait({waiter}, timeout=1.0)
    if not done:
        _killpg(pid, signal.SIGKILL)
        await asyncio.wait({waiter}, timeout=1.0)
    # Children that ignored SIGTERM outlive the shell; the group id still names them.
    _killpg(pid, signal.SIGKILL)
