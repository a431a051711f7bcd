"""An agent subprocess: spawned with an explicit env, stderr drained, shut down cleanly.

Nothing here loads more than the standard library and the walls: a cold one-shot spawns its
agent before the rest of avatar loads (docs/startup.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.bridges import spawning
from avatar.policy.kernel.guard import guard

if TYPE_CHECKING:
    from avatar.bridges.spawning import Spawned
    from avatar.policy.sandbox import Sandbox

# ACP messages (a replayed history, a big file) can be long lines (the ACP SDK's limit too).
STDOUT_LIMIT = 50 * 1024 * 1024
STDERR_TAIL_LINES = 40
STDERR_LINE_MAX = 2000


class StderrTail:
    """The last lines an agent wrote to stderr, kept for error messages."""

    def __init__(self, lines: int = STDERR_TAIL_LINES) -> None:
        self._lines: deque[str] = deque(maxlen=lines)
        self._partial = b""
        self.bytes_read = 0

    def feed(self, data: bytes) -> None:
        """Add a chunk of raw stderr; only complete lines (and a capped partial) are kept."""
        self.bytes_read += len(data)
        data = self._partial + data
        *lines, self._partial = data.split(b"\n")
        # A flood of lines: only the last few can survive, so skip decoding the rest.
        for raw in lines[-(self._lines.maxlen or 1) :]:
            self._add(raw)
        if len(self._partial) > STDERR_LINE_MAX * 4:
            self._partial = self._partial[-STDERR_LINE_MAX:]

    def close(self) -> None:
        """Keep the unterminated last line, if any."""
        if self._partial:
            self._add(self._partial)
            self._partial = b""

    def _add(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\r")
        if not line.strip():
            return
        if len(line) > STDERR_LINE_MAX:
            line = line[:STDERR_LINE_MAX] + " …"
        self._lines.append(line)

    def text(self, lines: int | None = None) -> str:
        """The kept lines joined with newlines (the last `lines` of them when given)."""
        kept = list(self._lines)
        if lines is not None:
            kept = kept[-lines:]
        return "\n".join(kept)


class Child:
    """A started process as the event loop sees it: its pipes as streams (stdout read up to
    STDOUT_LIMIT a line), its exit as `wait()` (the kernel tells the loop, through a pidfd)."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdin: asyncio.StreamWriter,
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
    ) -> None:
        self.popen, self.stdin, self.stdout, self.stderr = popen, stdin, stdout, stderr
        self._exited: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._watch()

    @classmethod
    async def of(cls, popen: subprocess.Popen[bytes]) -> Child:
        """`popen`'s pipes (all three: PIPE, unbuffered) connected to the running loop."""
        loop = asyncio.get_running_loop()
        assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
        stdout = asyncio.StreamReader(limit=STDOUT_LIMIT)
        stderr = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdout), popen.stdout)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stderr), popen.stderr)
        writing, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), popen.stdin
        )
        return cls(popen, asyncio.StreamWriter(writing, protocol, None, loop), stdout, stderr)

    def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            fd = os.pidfd_open(self.popen.pid)
        except (AttributeError, OSError):  # no pidfd (an old kernel): a thread waits
            waiting = loop.run_in_executor(None, self.popen.wait)
            waiting.add_done_callback(lambda done: self._exit(done.result()))
            return

        def exited() -> None:
            loop.remove_reader(fd)
            os.close(fd)
            self._exit(self.popen.wait())  # (at once: it has exited; this reaps it)

        loop.add_reader(fd, exited)

    def _exit(self, code: int) -> None:
        if not self._exited.done():
            self._exited.set_result(code)

    @property
    def pid(self) -> int:
        """The process id."""
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        """Its exit code (negative: the signal) once the loop saw it exit, else None."""
        return self._exited.result() if self._exited.done() else None

    async def wait(self) -> int:
        """Its exit code, once it exited."""
        return await asyncio.shield(self._exited)


class AgentProcess:
    """One running agent: stdin/stdout for ACP, stderr read continuously into a `StderrTail`.

    The agent gets its own process group, so a Ctrl-C in the terminal reaches avatar (which
    cancels the turn) rather than killing the agent, and `stop()` can end the agent's children.
    """

    def __init__(self, name: str, process: Child, sandbox: Sandbox | None = None) -> None:
        self.name = name
        self.process = process
        self.sandbox = sandbox
        self.stderr = StderrTail()
        self._drain = asyncio.get_running_loop().create_task(self._read_stderr())
        self.exited = asyncio.get_running_loop().create_task(process.wait())

    @classmethod
    async def spawn(
        cls,
        name: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        install_hint: str = "",
        sandbox: Sandbox | None = None,
    ) -> AgentProcess:
        """Start `argv` with exactly `env` (inside `sandbox`'s walls when given); a missing or
        unrunnable program is a ProviderError."""
        return await cls.adopt(name, spawning.spawn(name, argv, env, cwd, install_hint, sandbox))

    @classmethod
    async def adopt(cls, name: str, spawned: Spawned) -> AgentProcess:
        """The agent `spawning.spawn` started (perhaps before the event loop ran: a one-shot
        starts its agent first, `Engine.launch_ahead`), now read and written from the loop."""
        try:
            child = await Child.of(spawned.popen)
        except BaseException:  # (e.g. cancelled meanwhile: it is not left running)
            spawning.kill(spawned)
            raise
        return cls(name, child, spawned.sandbox)

    @property
    def pid(self) -> int:
        """The agent's process id (also its process group id)."""
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        """The exit code once the agent has exited, else None."""
        return self.process.returncode

    async def _read_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        try:
            while True:
                chunk = await stream.read(256 * 1024)
                if not chunk:
                    break
                self.stderr.feed(chunk)
        except (OSError, ValueError):
            pass
        finally:
            self.stderr.close()

    async def stderr_settled(self, timeout: float = 0.5) -> None:
        """Wait (briefly) until stderr hit EOF, so the tail holds the agent's last words."""
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self._drain), timeout)

    def describe_exit(self) -> str:
        """`exit code N` / `killed by SIGNAME`, for error messages."""
        code = self.returncode
        if code is None:
            return "still running"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"

    def death(self, name: str) -> str:
        """The one line saying agent `name` died on its own, and how."""
        return f"{name} exited unexpectedly ({self.describe_exit()})"

    async def stop(
        self, eof_grace: float = 0.5, term_grace: float = 2.0, *, at_once: bool = False
    ) -> None:
        """Close stdin, wait, then SIGTERM and finally SIGKILL the whole process group.

        Gemini exits on EOF; codex-acp and claude-agent-acp only on a signal, so the EOF grace
        is short (every `avatar chat` pays it) and SIGTERM gets the longer one. `at_once`: the
        agent said its files are safe (it answered `session/close`), so the group is killed
        without the SIGTERM round (which every one-shot would wait for).
        """
        proc = self.process
        if proc.stdin is not None and not proc.stdin.is_closing():
            with contextlib.suppress(Exception):
                proc.stdin.close()
        if at_once:
            self._signal(signal.SIGKILL)
            await self._wait(term_grace)
        elif not await self._wait(eof_grace):
            self._signal(signal.SIGTERM)
            if not await self._wait(term_grace):
                self._signal(signal.SIGKILL)
                await self._wait(term_grace)
        # Children (npm shims, relaunched node) may outlive the leader; end them too.
        self._signal(signal.SIGKILL)
        guard().release(self.pid)
        if self.sandbox is not None:
            self.sandbox.close()
        await self.stderr_settled(0.5)
        if not self._drain.done():
            self._drain.cancel()

    async def _wait(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(asyncio.shield(self.exited), timeout)
        except TimeoutError:
            return False
        return True

    def _signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)
