"""Terminals an ACP agent runs through the client: real subprocesses, bounded output.

Each terminal is its own process group, so `kill` ends a whole pipeline; output (stdout and
stderr merged) is kept up to a byte limit, dropping the oldest bytes at a character boundary
as the protocol asks. The working directory must lie inside the session's directories, and the
command must pass `scope.shell_commands` (the shell check shared with the native bash tool and
Claude's Bash tool, `avatar.policy.shell.check_argv`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from avatar.bridges.acp.fs import AccessDenied, FileAccess
from avatar.policy.commands import command_ended, start_command
from avatar.policy.denied import ScopeDenied
from avatar.policy.sandbox import Sandbox
from avatar.policy.shell import check_argv, check_env

DEFAULT_OUTPUT_LIMIT = 1024 * 1024
_SHELL_CHARS = set(" \t\n|&;<>()$`\\\"'*?[]#~=%")


@dataclass
class ExitStatus:
    """How a terminal's process ended: `exit_code`, or the `signal` that killed it."""

    exit_code: int | None = None
    signal: str | None = None


@dataclass
class Terminal:
    """One running (or finished) command and the output kept so far."""

    id: str
    process: asyncio.subprocess.Process
    limit: int
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    reader: asyncio.Task[None] | None = None

    def append(self, data: bytes) -> None:
        """Keep `data`, dropping the oldest bytes beyond the limit at a UTF-8 boundary."""
        self.output += data
        excess = len(self.output) - self.limit
        if excess > 0:
            # Never start inside a multi-byte character (continuation bytes are 0b10xxxxxx).
            while excess < len(self.output) and (self.output[excess] & 0xC0) == 0x80:
                excess += 1
            del self.output[:excess]
            self.truncated = True

    def text(self) -> str:
        """The kept output as text."""
        return self.output.decode("utf-8", "replace")

    def exit_status(self) -> ExitStatus | None:
        """The exit status once the process has ended, else None."""
        code = self.process.returncode
        if code is None:
            return None
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            return ExitStatus(signal=name)
        return ExitStatus(exit_code=code)


class TerminalManager:
    """Creates, reads, waits for, kills and releases the agent's terminals."""

    def __init__(
        self,
        files: FileAccess,
        env: Mapping[str, str],
        allowed_commands: Sequence[str] | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.files = files
        self.env = dict(env)
        #: The kernel's walls for the commands (None: `scope.sandbox: off`).
        self.sandbox = sandbox
        # The allow-list: by default the scope's own `shell_commands` (empty = any command).
        self.allowed = list(
            files.scope.shell_commands if allowed_commands is None else allowed_commands
        )
        self._terminals: dict[str, Terminal] = {}
        self._ids = itertools.count(1)

    def _argv(self, command: str, args: Sequence[str] | None) -> list[str]:
        # Agents send either a program plus args, or one shell command line without args.
        if not args and any(c in _SHELL_CHARS for c in command):
            return ["/bin/sh", "-c", command]
        return [command, *(args or [])]

    def _check_allowed(self, argv: list[str], env: Mapping[str, str]) -> None:
        try:
            check_argv(argv, self.allowed)
            check_env(env, self.allowed)
        except ScopeDenied as e:
            raise AccessDenied(str(e)) from None

    async def create(
        self,
        command: str,
        args: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
    ) -> str:
        """Start the command and return its terminal id; AccessDenied when not allowed."""
        workdir = self.files.check(cwd, "read") if cwd else self.files.cwd
        if not workdir.is_dir():
            raise AccessDenied(f"terminal cwd {cwd} is not a directory")
        argv = self._argv(command, args)
        self._check_allowed(argv, env or {})
        try:
            process = await start_command(
                argv, cwd=workdir, env={**self.env, **(env or {})}, sandbox=self.sandbox
            )
        except (OSError, ValueError) as e:  # ValueError: a NUL byte in an argument
            raise AccessDenied(
                f"cannot run {argv[0]}: {getattr(e, 'strerror', None) or e}"
            ) from None
        limit = DEFAULT_OUTPUT_LIMIT if output_byte_limit is None else max(output_byte_limit, 0)
        term = Terminal(id=f"term-{next(self._ids)}", process=process, limit=limit)
        term.reader = asyncio.get_running_loop().create_task(self._pump(term))
        self._terminals[term.id] = term
        return term.id

    async def _pump(self, term: Terminal) -> None:
        stream = term.process.stdout
        assert stream is not None
        with contextlib.suppress(OSError, ValueError):
            while chunk := await stream.read(65536):
                term.append(chunk)

    def get(self, terminal_id: str) -> Terminal:
        """The terminal with this id; AccessDenied when unknown (or released)."""
        term = self._terminals.get(terminal_id)
        if term is None:
            raise AccessDenied(f"unknown terminal {terminal_id}")
        return term

    def output(self, terminal_id: str) -> tuple[str, bool, ExitStatus | None]:
        """Output so far, whether it was truncated, and the exit status if finished."""
        term = self.get(terminal_id)
        return term.text(), term.truncated, term.exit_status()

    async def wait(self, terminal_id: str) -> ExitStatus:
        """Wait for the command to finish (and its output to be read)."""
        term = self.get(terminal_id)
        await term.process.wait()
        if term.reader is not None:
            # A background child may hold the pipe open; the exit status is what matters.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(term.reader), 1.0)
        status = term.exit_status()
        assert status is not None
        return status

    async def kill(self, terminal_id: str) -> None:
        """Kill the command's whole process group; the terminal stays readable."""
        term = self.get(terminal_id)
        if term.process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(term.process.pid, signal.SIGKILL)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(term.process.wait(), 2.0)
        command_ended(term.process)

    async def release(self, terminal_id: str) -> None:
        """Kill the command if still running and forget the terminal."""
        await self.kill(terminal_id)
        term = self._terminals.pop(terminal_id, None)
        if term is not None and term.reader is not None and not term.reader.done():
            term.reader.cancel()

    async def close(self) -> None:
        """Release every terminal (the bridge is stopping) and the sandbox's temp dir."""
        for terminal_id in list(self._terminals):
            await self.release(terminal_id)
        if self.sandbox is not None:
            self.sandbox.close()
