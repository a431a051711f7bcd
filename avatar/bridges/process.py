"""An agent subprocess: spawned with an explicit env, stderr drained, shut down cleanly.

Nothing here imports `acp`: the bridge spawns the agent first and imports the SDK while the
agent boots (DESIGN §1).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.core.errors import ProviderError
from avatar.policy.kernel.guard import guard

if TYPE_CHECKING:
    from avatar.policy.sandbox import Sandbox

# The SDK's own default: ACP messages (a replayed history, a big file) can be long lines.
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


def with_bundled_node(program: str, env: Mapping[str, str]) -> dict[str, str]:
    """`env`, with the Node of the program's own `node_modules/.bin` first on PATH when it
    ships one: the agents pinned in `bridges/` need a newer Node than a machine may have, and
    their `#!/usr/bin/env node` must find the pinned one."""
    out = dict(env)
    bin_dir = Path(program).parent
    if bin_dir.name == ".bin" and (bin_dir / "node").is_file():
        out["PATH"] = f"{bin_dir}{os.pathsep}{out.get('PATH', '')}"
    return out


def _child_setup(sandbox: Sandbox | None) -> Callable[[], None] | None:
    """What the child runs before exec (Linux): ask the kernel to SIGTERM it when avatar dies,
    then raise the sandbox's walls. Its own process group keeps it from a terminal's Ctrl-C, so
    without the signal an agent that ignores its stdin closing (Claude Code mid-turn) would
    outlive an avatar killed with SIGKILL (the guard then ends what it started). libc is loaded
    here, in the parent: importing after fork could deadlock."""
    if sys.platform != "linux":
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    pr_set_pdeathsig = 1
    walls = sandbox.preexec() if sandbox is not None else None

    def setup() -> None:
        prctl(pr_set_pdeathsig, int(signal.SIGTERM))
        if walls is not None:
            walls()

    return setup


class AgentProcess:
    """One running agent: stdin/stdout for ACP, stderr read continuously into a `StderrTail`.

    The agent gets its own process group, so a Ctrl-C in the terminal reaches avatar (which
    cancels the turn) rather than killing the agent, and `stop()` can end the agent's children.
    """

    def __init__(
        self, name: str, process: asyncio.subprocess.Process, sandbox: Sandbox | None = None
    ) -> None:
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
        if not cwd.is_dir():
            raise ProviderError(f"{name}: working directory {cwd} does not exist")
        env = with_bundled_node(argv[0], env)
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=sandbox.env(env) if sandbox else env,
                cwd=str(cwd),
                limit=STDOUT_LIMIT,
                start_new_session=True,
                preexec_fn=_child_setup(sandbox),
            )
        except (FileNotFoundError, PermissionError, NotADirectoryError) as e:
            hint = f" (install: {install_hint})" if install_hint else ""
            raise ProviderError(f"{name}: cannot run {argv[0]}: {e.strerror or e}{hint}") from None
        except OSError as e:
            raise ProviderError(f"{name}: cannot start {argv[0]}: {e}") from None
        guard().watch(process.pid)
        return cls(name, process, sandbox)

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
